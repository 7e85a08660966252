package queue

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
)

// ProcessingQueue is an SQS source queue with its dead-letter queue.
type ProcessingQueue interface {
	constructs.IConstruct
	// Queue is the source queue (construct id "Resource").
	Queue() awssqs.IQueue
	// DeadLetterQueue is where SQS moves a message after MaxReceiveCount receives
	// (construct id "DeadLetterQueue").
	DeadLetterQueue() awssqs.IQueue
	// Fifo reports whether both queues are FIFO queues.
	Fifo() bool
	// VisibilityTimeout is the source queue's visibility timeout.
	VisibilityTimeout() time.Duration
	// RetentionPeriod is the source queue's message retention period.
	RetentionPeriod() time.Duration
	// DeadLetterRetentionPeriod is how long the DLQ keeps a message: the consumer keeps
	// completed idempotency records at least the source's and the DLQ's retention together,
	// so a message redriven from the DLQ still finds its record.
	DeadLetterRetentionPeriod() time.Duration
	// MaxMessageSize is the largest message the source queue accepts, in bytes: the
	// consumer's MAX_BODY_BYTES.
	MaxMessageSize() int
	// MaxReceiveCount is the number of receives before a message moves to the DLQ; 0 for
	// an imported queue whose ExistingProcessingQueueProps.MaxReceiveCount was not given.
	MaxReceiveCount() int
}

type processingQueue struct {
	constructs.Construct
	queue, dlq awssqs.Queue
	s          settings
}

var _ ProcessingQueue = (*processingQueue)(nil)

// NewProcessingQueue creates the source queue and its DLQ. props may be nil (a standard
// queue with every default). Invalid props panic with a *validate.Error.
func NewProcessingQueue(scope constructs.Construct, id string, props *ProcessingQueueProps) ProcessingQueue {
	s := resolve(scope, id, props)
	// Override registers q itself as the jsii construct, so q can be passed anywhere a
	// construct is expected (Stack.Of, Names, as a scope).
	q := &processingQueue{s: s}
	constructs.NewConstruct_Override(q, scope, jsii.String(id))
	stack := awscdk.Stack_Of(q)

	if s.queueName == "" {
		s.queueName = derivedName(q, s.fifo)
		q.s.queueName = s.queueName
	}
	// The source ARN is composed from the name, not read from the queue: the source's
	// redrive policy already references the DLQ, and a reference back would be a
	// CloudFormation dependency cycle.
	sourceArn := stack.FormatArn(&awscdk.ArnComponents{
		Service:   jsii.String("sqs"),
		Resource:  jsii.String(s.queueName),
		ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
	})
	sourceRef := awssqs.Queue_FromQueueAttributes(q, jsii.String("SourceQueueRef"), &awssqs.QueueAttributes{
		QueueArn: sourceArn,
		Fifo:     jsii.Bool(s.fifo),
	})

	common := s.commonQueueProps()
	dlqProps := common
	dlqProps.RetentionPeriod = seconds(s.deadLetterRetention)
	dlqProps.RedriveAllowPolicy = &awssqs.RedriveAllowPolicy{
		RedrivePermission: awssqs.RedrivePermission_BY_QUEUE,
		SourceQueues:      &[]awssqs.IQueue{sourceRef},
	}
	dlqProps.RemovalPolicy = s.deadLetterRemovalPolicy
	q.dlq = awssqs.NewQueue(q, jsii.String("DeadLetterQueue"), &dlqProps)

	srcProps := common
	srcProps.QueueName = jsii.String(s.queueName)
	srcProps.RetentionPeriod = seconds(s.retentionPeriod)
	srcProps.VisibilityTimeout = seconds(s.visibilityTimeout)
	srcProps.DeadLetterQueue = &awssqs.DeadLetterQueue{Queue: q.dlq, MaxReceiveCount: jsii.Number(float64(s.maxReceiveCount))}
	if s.fifo && s.contentBasedDeduplication {
		srcProps.ContentBasedDeduplication = jsii.Bool(true)
	}
	q.queue = awssqs.NewQueue(q, jsii.String("Resource"), &srcProps)

	// A DLQ is the end of the line (SQS redrive, and the consumer dead-lettering bad input);
	// a DLQ of its own would only move the problem.
	cdknag.NagSuppressions_AddResourceSuppressions(q.dlq, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-SQSRedrivePolicy"),
		Reason: jsii.String("This queue is the dead-letter queue of the ProcessingQueue's source queue: it receives failed messages (by SQS redrive, or sent by the consumer for input that can never succeed), and a DLQ of its own would only move the problem. Alarm on its depth instead."),
	}}, jsii.Bool(false))
	if s.encryptionKey == nil {
		checkov.Add(q.queue, checkov.QueueSQSManagedEncryption)
		checkov.Add(q.dlq, checkov.QueueSQSManagedEncryption)
	}
	return q
}

// commonQueueProps are the secure settings both queues share: encryption, TLS only, type.
func (s settings) commonQueueProps() awssqs.QueueProps {
	p := awssqs.QueueProps{
		EnforceSSL: jsii.Bool(true),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED,
		// Stated, not left to SQS's default: the consumer's MAX_BODY_BYTES is this value.
		MaxMessageSizeBytes: jsii.Number(float64(s.maxMessageSize)),
	}
	if s.encryptionKey != nil {
		p.Encryption = awssqs.QueueEncryption_KMS
		p.EncryptionMasterKey = s.encryptionKey
	}
	if s.fifo {
		p.Fifo = jsii.Bool(true)
		if s.highThroughput {
			p.DeduplicationScope = awssqs.DeduplicationScope_MESSAGE_GROUP
			p.FifoThroughputLimit = awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID
		}
	}
	return p
}

// derivedName is a deterministic, unique physical name for the source queue: stack name and
// construct path, trimmed in the middle with a hash, within SQS's 80 characters.
func derivedName(c constructs.IConstruct, fifo bool) string {
	max := maxQueueNameLength
	if fifo {
		max -= len(fifoSuffix)
	}
	name := *awscdk.Names_UniqueResourceName(c, &awscdk.UniqueResourceNameOptions{
		MaxLength:                jsii.Number(float64(max)),
		Separator:                jsii.String("-"),
		AllowedSpecialCharacters: jsii.String("-_"),
	})
	if fifo {
		name += fifoSuffix
	}
	return name
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

func (q *processingQueue) Queue() awssqs.IQueue             { return q.queue }
func (q *processingQueue) DeadLetterQueue() awssqs.IQueue   { return q.dlq }
func (q *processingQueue) Fifo() bool                       { return q.s.fifo }
func (q *processingQueue) VisibilityTimeout() time.Duration { return q.s.visibilityTimeout }
func (q *processingQueue) RetentionPeriod() time.Duration   { return q.s.retentionPeriod }
func (q *processingQueue) DeadLetterRetentionPeriod() time.Duration {
	return q.s.deadLetterRetention
}
func (q *processingQueue) MaxReceiveCount() int { return q.s.maxReceiveCount }
func (q *processingQueue) MaxMessageSize() int  { return q.s.maxMessageSize }
