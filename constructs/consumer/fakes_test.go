package consumer_test

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// fakeQueue stands in for constructs/queue's ProcessingQueue: an encrypted, SSL-only queue
// with a redrive policy to a DLQ of the same type, as that construct builds it, so the
// fixture's cdk-nag run judges only what the consumer adds.
type fakeQueue struct {
	queue      awssqs.IQueue
	dlq        awssqs.IQueue
	fifo       bool
	visibility time.Duration
	retention  time.Duration
	maxMessage int // bytes; 0: not reported (SQS's default)
}

func (q *fakeQueue) Queue() awssqs.IQueue             { return q.queue }
func (q *fakeQueue) Fifo() bool                       { return q.fifo }
func (q *fakeQueue) VisibilityTimeout() time.Duration { return q.visibility }
func (q *fakeQueue) RetentionPeriod() time.Duration   { return q.retention }
func (q *fakeQueue) DeadLetterQueue() awssqs.IQueue   { return q.dlq }

func (q *fakeQueue) MaxMessageSize() int { return q.maxMessage }

// DeadLetterRetentionPeriod is the fake DLQ's 14 days.
func (q *fakeQueue) DeadLetterRetentionPeriod() time.Duration { return 14 * 24 * time.Hour }

var (
	_ consumer.DeadLetterSource          = (*fakeQueue)(nil)
	_ consumer.DeadLetterRetentionSource = (*fakeQueue)(nil)
	_ consumer.MessageSizeSource         = (*fakeQueue)(nil)
)

func newFakeQueue(scope constructs.Construct, id string, fifo bool, visibility, retention time.Duration) *fakeQueue {
	q, dlq := cdktest.PlainQueue(scope, id, fifo, visibility, retention)
	return &fakeQueue{queue: q, dlq: dlq, fifo: fifo, visibility: visibility, retention: retention}
}

// fakeTable stands in for constructs/table's IdempotencyTable.
type fakeTable struct {
	table        awsdynamodb.Table
	partitionKey string // "" stands for "id"
	sortKey      string
}

func (t *fakeTable) Table() awsdynamodb.ITable { return t.table }
func (t *fakeTable) SortKeyName() string       { return t.sortKey }
func (t *fakeTable) PartitionKeyName() string {
	if t.partitionKey == "" {
		return "id"
	}
	return t.partitionKey
}
func (t *fakeTable) GrantIdempotency(grantee awsiam.IGrantable) awsiam.Grant {
	return awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("dynamodb:UpdateItem"),
		ResourceArns: jsii.Strings(*t.table.TableArn()),
	})
}

var _ consumer.Store = (*fakeTable)(nil)

func newFakeTable(scope constructs.Construct, id, sortKey string) *fakeTable {
	props := &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expiration"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	}
	if sortKey != "" {
		props.SortKey = &awsdynamodb.Attribute{Name: jsii.String(sortKey), Type: awsdynamodb.AttributeType_STRING}
	}
	t := awsdynamodb.NewTable(scope, jsii.String(id), props)
	nag.Suppress(t, false, "test fixture: a stand-in for constructs/table's table, which records its own backup choice", nag.IDs("DynamoDBInBackupPlan", nag.NIST, nag.HIPAA)...)
	return &fakeTable{table: t, sortKey: sortKey}
}
