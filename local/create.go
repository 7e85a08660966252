package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// The start's fifth stage, create: the backends (DynamoDB Local, ElasticMQ, the proxy in
// front of DynamoDB Local, the functions' AWS endpoints) and every stack's queues, tables and
// buckets, then the stand-ins for the tables the stacks import and each queue's visibility
// timeout.

// startBackends starts DynamoDB Local and ElasticMQ (installed first if need be), and the
// proxy in front of DynamoDB Local through which the functions' calls go: it injects the
// faults InjectDynamoDB asks for and feeds each stack's DynamoDB metrics.
func (k *Kit) startBackends(ctx context.Context) error {
	if err := useBackends(ctx, k.opts.Progress); err != nil {
		return err
	}
	fmt.Fprintln(k.opts.Progress, "local: starting DynamoDB Local and ElasticMQ")
	var wg sync.WaitGroup
	var dErr, sErr error
	wg.Go(func() { k.ddb, dErr = dynamolocal.StartContext(ctx) })
	wg.Go(func() { k.sqsd, sErr = sqslocal.StartKind(ctx, sqslocal.ElasticMQ) })
	wg.Wait()
	if err := errors.Join(dErr, sErr); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	k.sq, k.db = k.sqsd.Client(), k.ddb.Client()
	k.s3, k.s3h = newS3()
	if err := k.listenAWS(); err != nil {
		return err
	}
	var err error
	if k.egress, err = listenEgress(k.binDir, k.refusedCall, k.answerFor); err != nil {
		return err
	}
	if k.proxy, err = ddbproxy.New(k.ddb.Endpoint()); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	// The proxy's hooks are set once, before any function runs, and read what changes
	// through atomics: InjectDynamoDB swaps the fault function, each deploy the stacks.
	k.proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		fail := k.inject.Load()
		if fail == nil {
			return ddbproxy.Fault{}
		}
		switch typ := (*fail)(DynamoDBCall{Op: c.Op, Table: c.Table, Key: c.Key}); {
		case typ == "":
			return ddbproxy.Fault{}
		case strings.Contains(typ, "InternalServerError") || strings.Contains(typ, "ServiceUnavailable"):
			return ddbproxy.Fault{Status: 500, Type: typ}
		default:
			return ddbproxy.Fault{Status: 400, Type: typ}
		}
	}
	k.proxy.Observe = func(c ddbproxy.Call, r ddbproxy.Reply) { // DynamoDB's metrics of each stack's tables
		if sts := k.observed.Load(); sts != nil {
			for _, st := range *sts {
				st.obs.Dynamo(c, r)
			}
		}
	}
	return nil
}

// create starts the backends, then creates every stack's queues and tables (all of them
// first, so that a function of one stack may refer to another's: Fn::ImportValue), gives the
// stacks' secrets their values, then makes the stand-ins and visibility timeouts the
// pipelines' consumers need.
func (k *Kit) create(ctx context.Context, plans []*stackPlan) error {
	if err := k.startBackends(ctx); err != nil {
		return err
	}
	for _, sp := range plans {
		if err := k.createStack(ctx, sp); err != nil {
			return err
		}
	}
	sts := slices.Clone(k.stacks)
	k.observed.Store(&sts)
	for _, st := range k.stacks {
		if err := k.ownSecrets(st); err != nil {
			return err
		}
	}
	for i, sp := range plans {
		for _, p := range sp.pipelines {
			if err := k.prepare(ctx, k.stacks[i], sp, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepare makes pipeline p's consumer a stand-in for the idempotency table it imports, if it
// does, and gives its queue the visibility timeout the plan gives it.
func (k *Kit) prepare(ctx context.Context, st *stackRun, sp *stackPlan, p standin.Pipeline) error {
	if err := k.standIn(ctx, st, p.Consumer); err != nil {
		return err
	}
	visibility := sp.visibility[p.Mapping.LogicalID]
	if visibility <= 0 {
		return nil
	}
	if _, err := k.sq.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(st.d.QueueURL[p.Queue]),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility.Seconds()))}}); err != nil {
		return fmt.Errorf("local: stack %s: queue %s VisibilityTimeout: %w", sp.ref.DisplayName, p.Queue, err)
	}
	return nil
}

// createStack creates one stack's queues, tables and buckets.
func (k *Kit) createStack(ctx context.Context, sp *stackPlan) error {
	ref := sp.ref
	byID := func(id string) *standin.Deployment {
		for _, st := range k.stacks {
			if st.ref.ID == id {
				return st.d
			}
		}
		return nil
	}
	if ref.Parent != "" { // the parent is created: its values are known
		if err := sp.t.UseParameters(nestedParameters(ref, byID(ref.Parent))); err != nil {
			return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
		}
	}
	d, err := standin.Deploy(ctx, k.sq, k.db, sp.t, stackSuffix(ref))
	if err != nil {
		return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
	}
	d.StackName, d.Overrides = ref.StackName, k.opts.Env
	d.Import = func(name string) (any, error) {
		deps := make([]*standin.Deployment, len(k.stacks))
		for i, st := range k.stacks {
			deps[i] = st.d
		}
		return importValue(deps, name)
	}
	d.NestedOutput = func(res, out string) (any, error) { return nestedOutput(byID, ref.ID, res, out) }
	for _, id := range slices.Sorted(maps.Keys(d.Bucket)) {
		if err := k.s3.CreateBucket(d.Bucket[id]); err != nil {
			return fmt.Errorf("local: stack %s: bucket %s (%s): %w", ref.DisplayName, id, d.Bucket[id], err)
		}
	}
	st := &stackRun{ref: ref, d: d}
	st.obs = standin.NewObserver(d, k.sq, st.functionName, k.opts.AlarmTimeScale, func(format string, args ...any) {
		k.background(fmt.Errorf("stack %s: "+format, append([]any{ref.DisplayName}, args...)...))
	})
	k.stacks = append(k.stacks, st)
	return nil
}

// standIn creates, for a consumer whose idempotency table the stack imports (an existing
// table, named but not created by the template), a local table of that name with the key
// schema the consumer is told (IDEMPOTENCY_PARTITION_KEY, IDEMPOTENCY_SORT_KEY) and time to
// live on "expiration", and notes it in StandIns.
func (k *Kit) standIn(ctx context.Context, st *stackRun, consumer string) error {
	env, err := st.d.Env(consumer)
	if err != nil {
		return fmt.Errorf("local: stack %s: %w", st.ref.DisplayName, err)
	}
	name := env[contract.EnvTableName]
	if name == "" || slices.Contains(slices.Collect(maps.Values(st.d.TableName)), name) {
		return nil
	}
	if _, err := k.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}); err == nil {
		return nil // another consumer's stand-in
	}
	pk, sk := env[contract.EnvPartitionKey], env[contract.EnvSortKey]
	if pk == "" {
		pk = "id"
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: dbtypes.BillingModePayPerRequest,
		KeySchema:            []dbtypes.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: dbtypes.KeyTypeHash}},
		AttributeDefinitions: []dbtypes.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: dbtypes.ScalarAttributeTypeS}}}
	if sk != "" {
		in.KeySchema = append(in.KeySchema, dbtypes.KeySchemaElement{AttributeName: aws.String(sk), KeyType: dbtypes.KeyTypeRange})
		in.AttributeDefinitions = append(in.AttributeDefinitions, dbtypes.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: dbtypes.ScalarAttributeTypeS})
	}
	if _, err := k.db.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("local: stack %s: a stand-in for the imported idempotency table %s: %w", st.ref.DisplayName, name, err)
	}
	if _, err := k.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
		TimeToLiveSpecification: &dbtypes.TimeToLiveSpecification{AttributeName: aws.String("expiration"), Enabled: aws.Bool(true)}}); err != nil {
		return fmt.Errorf("local: stack %s: TTL of the stand-in table %s: %w", st.ref.DisplayName, name, err)
	}
	key := pk
	if sk != "" {
		key += ", sort key " + sk
	}
	k.mu.Lock()
	k.standIns = append(k.standIns, fmt.Sprintf("%s: table %s (imported by the stack; created locally with partition key %s, TTL on expiration)", st.ref.DisplayName, name, key))
	k.mu.Unlock()
	return nil
}
