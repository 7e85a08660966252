package standin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
)

// Deployment is a Template created on the local backends: real queue URLs and ARNs, table
// names, and every function's environment with its CloudFormation expressions resolved.
type Deployment struct {
	Template  *Template
	Suffix    string
	QueueURL  map[string]string // logical id -> URL
	QueueARN  map[string]string // logical id -> ARN
	QueueName map[string]string // logical id -> name
	TableName map[string]string // logical id -> name
	TopicARN  map[string]string // logical id -> ARN (topics are the kit's own: Kit's SNS stand-in)
	Bucket    map[string]string // logical id -> bucket name (the kit's S3)
	SecretARN map[string]string // logical id -> ARN (secrets are the kit's own: package local answers them)
	// Ignored lists the template properties that have no local meaning (encryption,
	// backups, tags), so a reader of the test log knows what was not exercised.
	Ignored []string
	// StackName is the stack's CloudFormation name (Ref AWS::StackName); default the
	// template's name.
	StackName string
	// Import gives the value of another stack's export (Fn::ImportValue), nil for none.
	Import func(name string) (any, error)
	// NestedOutput, when set, is the value of output of the nested stack that the template's
	// AWS::CloudFormation::Stack resource runs (Fn::GetAtt [resource, Outputs.output]).
	NestedOutput func(resource, output string) (any, error)
	// Overrides are variables set in the functions' environments over the template's
	// (Options.Env): "VAR" in every function's, "FUNCTION.VAR" in the function of that
	// logical id's. An overridden variable's template value is not resolved.
	Overrides map[string]string
	// Functions are the functions' names where they are not the kit's own (logical id ->
	// physical name): a deployment the kit attached to (Attached).
	Functions map[string]string

	byName  map[string]string // template QueueName -> logical id
	region  string
	account string
}

// Queue properties that have no effect on delivery semantics and are not applied locally.
var ignoredQueueProps = map[string]bool{
	"Tags": true, "SqsManagedSseEnabled": true, "KmsMasterKeyId": true, "KmsDataKeyReusePeriodSeconds": true,
}

// Queue properties applied as SQS attributes of the same name.
var plainQueueAttrs = []string{
	"VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "MaximumMessageSize",
	"ReceiveMessageWaitTimeSeconds", "FifoQueue", "ContentBasedDeduplication",
	"DeduplicationScope", "FifoThroughputLimit",
}

// Table properties with no local meaning.
var ignoredTableProps = map[string]bool{
	"PointInTimeRecoverySpecification": true, "SSESpecification": true, "DeletionProtectionEnabled": true,
	"Tags": true, "ContributorInsightsSpecification": true,
}

// Deploy creates every queue and table of t on the local backends, each name ending in
// suffix so that several deployments of one template live side by side (one per scenario).
// An unknown property is an error: the kit never silently deploys something other than
// the template.
func Deploy(ctx context.Context, sq *sqs.Client, db *dynamodb.Client, t *Template, suffix string) (*Deployment, error) {
	d := newDeployment(t, suffix)
	ids := slices.Sorted(maps.Keys(t.Queues))
	// Pass 1: every queue with its plain attributes, so that every ARN exists for pass 2.
	for _, id := range ids {
		q := t.Queues[id]
		attrs, err := d.QueueAttributes(q)
		if err != nil {
			return nil, err
		}
		name := d.localQueueName(q)
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return nil, fmt.Errorf("create queue %s (%s): %w", id, name, err)
		}
		arn, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return nil, fmt.Errorf("queue %s ARN: %w", id, err)
		}
		d.QueueURL[id], d.QueueName[id] = *out.QueueUrl, name
		if orig, ok := q.Props["QueueName"].(string); ok {
			d.byName[orig] = id
		}
		d.QueueARN[id] = arn.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		if parts := strings.Split(d.QueueARN[id], ":"); len(parts) == 6 {
			d.region, d.account = parts[3], parts[4]
		}
	}
	// Pass 2: redrive and redrive-allow policies, with their references resolved. A
	// redrive-allow policy only restricts which queues may use a DLQ; a server that does not
	// know it (ElasticMQ) is told nothing and the test log says so.
	for _, id := range ids {
		for _, k := range []string{"RedrivePolicy", "RedriveAllowPolicy"} {
			v, ok := t.Queues[id].Props[k]
			if !ok {
				continue
			}
			resolved, err := d.Resolve(v)
			if err != nil {
				return nil, fmt.Errorf("queue %s %s: %w", id, k, err)
			}
			b, _ := json.Marshal(resolved)
			_, err = sq.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(d.QueueURL[id]), Attributes: map[string]string{k: string(b)}})
			var api smithy.APIError
			if k == "RedriveAllowPolicy" && errors.As(err, &api) && strings.HasSuffix(api.ErrorCode(), "InvalidAttributeName") {
				d.ignore("queue " + id + " " + k + " (not supported by the local SQS server)")
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("queue %s %s: %w", id, k, err)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.Tables)) {
		if err := d.createTable(ctx, db, t.Tables[id]); err != nil {
			return nil, err
		}
	}
	if d.region == "" {
		d.region, d.account = sqslocal.Region, sqslocal.AccountID
	}
	d.nameTopics()
	return d, nil
}

func newDeployment(t *Template, suffix string) *Deployment {
	return &Deployment{
		Template: t, Suffix: suffix,
		QueueURL: map[string]string{}, QueueARN: map[string]string{}, QueueName: map[string]string{},
		TableName: map[string]string{}, TopicARN: map[string]string{}, Bucket: map[string]string{}, SecretARN: map[string]string{},
		byName:  map[string]string{},
		Ignored: slices.Clone(t.NotApplied),
	}
}

// Planned is a Deployment of t that creates nothing: every queue and table has the local name
// Deploy would give it and a URL and ARN of the same shape, so that the functions'
// environments can be resolved, and every problem reported, before anything starts.
func Planned(t *Template, suffix string) *Deployment {
	d := newDeployment(t, suffix)
	d.region, d.account = sqslocal.Region, sqslocal.AccountID // as ElasticMQ's ARNs will say
	for id, q := range t.Queues {
		name := d.localQueueName(q)
		d.QueueName[id], d.QueueURL[id] = name, "http://localhost/"+d.account+"/"+name
		d.QueueARN[id] = "arn:aws:sqs:" + d.region + ":" + d.account + ":" + name
		if orig, ok := q.Props["QueueName"].(string); ok {
			d.byName[orig] = id
		}
	}
	for id, tb := range t.Tables {
		d.TableName[id] = d.localTableName(tb)
	}
	d.nameTopics()
	return d
}

// Attached is a Deployment of t that the kit did not create: the stack as CloudFormation
// deployed it, each resource under its physical name (logical id -> physical id, as
// DescribeStackResources answers: a queue's URL, a table's or function's name), its queues'
// ARNs in region and account. Nothing is created.
func Attached(t *Template, suffix, region, account string, physical map[string]string) *Deployment {
	d := newDeployment(t, suffix)
	d.region, d.account, d.Functions = region, account, map[string]string{}
	for id, q := range t.Queues {
		url, ok := physical[id]
		if !ok {
			continue
		}
		name := url[strings.LastIndex(url, "/")+1:]
		d.QueueURL[id], d.QueueName[id] = url, name
		d.QueueARN[id] = "arn:aws:sqs:" + region + ":" + account + ":" + name
		if orig, ok := q.Props["QueueName"].(string); ok {
			d.byName[orig] = id
		}
	}
	for id := range t.Tables {
		if name, ok := physical[id]; ok {
			d.TableName[id] = name
		}
	}
	for id := range t.Functions {
		if name, ok := physical[id]; ok {
			d.Functions[id] = name
		}
	}
	d.nameTopics()
	for id := range t.Secrets { // a secret's physical id is its ARN
		if arn, ok := physical[id]; ok {
			d.SecretARN[id] = arn
		}
	}
	return d
}

// nameTopics gives each topic and each secret its local ARN, and each bucket its name: the
// name the template gives it (suffixed where another stack of the run gives it too), else
// its logical id and the suffix.
func (d *Deployment) nameTopics() {
	for id, tp := range d.Template.Topics {
		name, _ := tp.Props["TopicName"].(string)
		if !d.keeps(name) {
			name = strings.TrimSuffix(cmp.Or(name, id), ".fifo") + "-" + d.Suffix
			if tp.Fifo() {
				name += ".fifo"
			}
		}
		d.TopicARN[id] = "arn:aws:sns:" + d.region + ":" + d.account + ":" + name
	}
	for id, b := range d.Template.buckets {
		name, _ := b.Props["BucketName"].(string)
		if !d.keeps(name) {
			// S3's names: 3-63 characters, lower case letters, digits, dots and hyphens.
			name = strings.Trim(bucketUnsafe.ReplaceAllString(strings.ToLower(cmp.Or(name, id)+"-"+d.Suffix), "-"), "-.")
			name = name[:min(len(name), 63)]
		}
		d.Bucket[id] = name
	}
	for id, s := range d.Template.Secrets {
		name, _ := s.Props["Name"].(string)
		if !d.keeps(name) {
			name = cmp.Or(name, id) + "-" + d.Suffix
		}
		// Secrets Manager adds six characters to a secret's name in its ARN.
		sum := sha256.Sum256([]byte(name))
		d.SecretARN[id] = "arn:aws:secretsmanager:" + d.region + ":" + d.account + ":secret:" + name + "-" + hex.EncodeToString(sum[:3])
	}
}

var bucketUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// keeps reports whether a name the template gives (a QueueName, ...) is the resource's local
// name as it is: only when the run says which names clash (Template.Clashes, which package
// local sets for the stacks it runs together) and this one does not. A harness that deploys
// one template several times side by side (test/e2e) sets none, and every name is suffixed.
func (d *Deployment) keeps(name string) bool {
	return name != "" && d.Template.Clashes != nil && !d.Template.Clashes[name]
}

func (d *Deployment) localTableName(tb Table) string {
	name, _ := tb.Props["TableName"].(string)
	if d.keeps(name) { // the app's own name, as a function may name it
		return name
	}
	if name == "" {
		name = tb.LogicalID
	}
	return name + "-" + d.Suffix
}

// QueueAttributes are the SQS attributes of q's plain properties, each resolved (a
// parameter's value), and notes what has no local meaning.
func (d *Deployment) QueueAttributes(q Queue) (map[string]string, error) {
	attrs := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(q.Props)) {
		switch {
		case slices.Contains(plainQueueAttrs, k):
			v, err := d.Resolve(q.Props[k])
			var u *cfn.Unresolved
			if errors.As(err, &u) && u.Param != "" {
				return nil, fmt.Errorf("queue %s: %s refers to %w: %s", q.LogicalID, k, u, giveParameter(u.Param))
			}
			if err != nil {
				return nil, fmt.Errorf("queue %s: %s refers to %w", q.LogicalID, k, err)
			}
			attrs[k] = cfn.Scalar(v)
		case k == "QueueName", k == "RedrivePolicy", k == "RedriveAllowPolicy":
		case ignoredQueueProps[k]:
			d.ignore("queue " + q.LogicalID + " " + k)
		default:
			return nil, fmt.Errorf("queue %s: property %s is not understood by the local kit (package local), which never creates something other than the template says: remove it, or report it to the project so the kit learns what it means", q.LogicalID, k)
		}
	}
	return attrs, nil
}

func (d *Deployment) ignore(what string) {
	if !slices.Contains(d.Ignored, what) {
		d.Ignored = append(d.Ignored, what)
	}
}

func (d *Deployment) localQueueName(q Queue) string {
	if q.shared != "" { // another stack's queue (LinkQueue): the name that stack gives it
		return q.shared
	}
	base, _ := q.Props["QueueName"].(string)
	if d.keeps(base) && !q.standIn { // the app's own name, as a function may name it
		return base
	}
	if base == "" {
		base = q.LogicalID
	}
	base = strings.TrimSuffix(base, ".fifo")
	// SQS names: 80 characters of [A-Za-z0-9_-], ".fifo" included.
	limit := 80 - len(d.Suffix) - 1
	if q.Fifo() {
		limit -= len(".fifo")
	}
	if len(base) > limit {
		base = base[:limit]
	}
	name := base + "-" + d.Suffix
	if q.Fifo() {
		name += ".fifo"
	}
	return name
}

func (d *Deployment) createTable(ctx context.Context, db *dynamodb.Client, tb Table) error {
	in := &dynamodb.CreateTableInput{BillingMode: dbtypes.BillingModePayPerRequest}
	var ttl *dbtypes.TimeToLiveSpecification
	kind := "table"
	if tb.global {
		kind = "global table" // CDK's TableV2: created as its replica in this region
	}
	for _, k := range slices.Sorted(maps.Keys(tb.Props)) {
		v := tb.Props[k]
		raw, _ := json.Marshal(v)
		var err error
		switch k {
		case "KeySchema":
			err = json.Unmarshal(raw, &in.KeySchema)
		case "AttributeDefinitions":
			err = json.Unmarshal(raw, &in.AttributeDefinitions)
		case "GlobalSecondaryIndexes":
			err = json.Unmarshal(raw, &in.GlobalSecondaryIndexes)
		case "LocalSecondaryIndexes":
			err = json.Unmarshal(raw, &in.LocalSecondaryIndexes)
		case "BillingMode":
			switch v {
			case "PAY_PER_REQUEST":
			case "PROVISIONED":
				if !tb.global {
					in.BillingMode = dbtypes.BillingModeProvisioned
				}
			default:
				return fmt.Errorf("%s %s: BillingMode %v: the local kit knows PAY_PER_REQUEST and PROVISIONED", kind, tb.LogicalID, v)
			}
		case "ProvisionedThroughput":
			// A provisioned table (CloudFormation's default billing mode when BillingMode is
			// absent). DynamoDB Local takes the capacity and does not enforce it: throttling
			// is what the scenarios inject through the proxy; the auto scaling resources
			// (AWS::ApplicationAutoScaling::*) have no local meaning.
			in.BillingMode = dbtypes.BillingModeProvisioned
			in.ProvisionedThroughput = new(dbtypes.ProvisionedThroughput)
			err = json.Unmarshal(raw, in.ProvisionedThroughput)
			d.ignore(kind + " " + tb.LogicalID + " ProvisionedThroughput (not enforced by DynamoDB Local) and its auto scaling")
		case "TimeToLiveSpecification":
			ttl = new(dbtypes.TimeToLiveSpecification)
			err = json.Unmarshal(raw, ttl)
		case "TableName":
		case "Replicas":
			d.ignore(replicaNote(tb.LogicalID, v))
		case "WriteProvisionedThroughputSettings", "WriteOnDemandThroughputSettings", "OnDemandThroughput", "WarmThroughput",
			"StreamSpecification", "TableClass", "KinesisStreamSpecification", "ResourcePolicy", "ImportSourceSpecification":
			d.ignore(kind + " " + tb.LogicalID + " " + k)
		default:
			if !ignoredTableProps[k] {
				return fmt.Errorf("%s %s: property %s is not understood by the local kit (package local), which never creates something other than the template says: remove it, or report it to the project so the kit learns what it means", kind, tb.LogicalID, k)
			}
			d.ignore(kind + " " + tb.LogicalID + " " + k)
		}
		if err != nil {
			return fmt.Errorf("%s %s %s: %w", kind, tb.LogicalID, k, err)
		}
	}
	// The indexes' capacity, like the table's, is not enforced; an on-demand table takes none.
	for i := range in.GlobalSecondaryIndexes {
		g := &in.GlobalSecondaryIndexes[i]
		g.OnDemandThroughput, g.WarmThroughput = nil, nil
		if in.BillingMode == dbtypes.BillingModePayPerRequest {
			g.ProvisionedThroughput = nil
		}
	}
	name := d.localTableName(tb)
	in.TableName = aws.String(name)
	if _, err := db.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("create %s %s: %w", kind, tb.LogicalID, err)
	}
	if ttl != nil {
		if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: in.TableName, TimeToLiveSpecification: ttl}); err != nil {
			return fmt.Errorf("%s %s TTL: %w", kind, tb.LogicalID, err)
		}
	}
	d.TableName[tb.LogicalID] = name
	return nil
}

// replicaNote says what the kit does with a global table's replicas: one table, this region's.
func replicaNote(id string, replicas any) string {
	list, _ := replicas.([]any)
	note := "global table " + id + " Replicas: one local table stands for the replica in the stack's region"
	if len(list) > 1 {
		note += fmt.Sprintf(" (%d other replicas not created)", len(list)-1)
	}
	return note + "; replica settings (point-in-time recovery, deletion protection, tags, table class) have no local meaning"
}

// Env returns a function's environment with every value resolved against this deployment
// and the Overrides applied. Every variable the kit cannot resolve is reported, each naming
// what it refers to and how to give the variable a value instead.
func (d *Deployment) Env(function string) (map[string]string, error) {
	f, ok := d.Template.Functions[function]
	if !ok {
		return nil, fmt.Errorf("no function %s", function)
	}
	env := map[string]string{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(f.Env)) {
		if v, ok := d.Override(function, k); ok {
			env[k] = v
			continue
		}
		r, err := d.Resolve(f.Env[k])
		if err != nil {
			errs = append(errs, envError(function, k, err))
			continue
		}
		s, ok := r.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("function %s: %s resolved to %T, want a string", function, k, r))
			continue
		}
		env[k] = s
	}
	for k, v := range d.Overrides { // a variable the template does not set: everyone's value...
		if _, set := f.Env[k]; !set && !strings.Contains(k, ".") {
			env[k] = v
		}
	}
	for k, v := range d.Overrides { // ...then the function's own
		if name, ok := strings.CutPrefix(k, function+"."); ok {
			env[name] = v
		}
	}
	return env, errors.Join(errs...)
}

// Override is the value Overrides give function's variable name: "FUNCTION.NAME" before "NAME".
func (d *Deployment) Override(function, name string) (string, bool) {
	if v, ok := d.Overrides[function+"."+name]; ok {
		return v, true
	}
	v, ok := d.Overrides[name]
	return v, ok
}

// giveParameter says how to give a parameter its local value.
func giveParameter(name string) string {
	return fmt.Sprintf("give the parameter a value with Options.Parameters[%q] or pipelinectl local up --parameter %s=VALUE", name, name)
}

// envError says why a variable has no local value and how to give it one.
func envError(function, name string, err error) error {
	set := fmt.Sprintf("Options.Env[%q] or pipelinectl local up --env %s.%s=VALUE", function+"."+name, function, name)
	var u *cfn.Unresolved
	if !errors.As(err, &u) {
		return fmt.Errorf("function %s: %s: %w; set the variable for the local run with %s", function, name, err, set)
	}
	if u.Param != "" {
		return fmt.Errorf("function %s: %s refers to %s, %s: %s, or set the variable with %s", function, name, u.What, u.Why, giveParameter(u.Param), set)
	}
	return fmt.Errorf("function %s: %s refers to %s, %s: set the variable for the local run with %s", function, name, u.What, u.Why, set)
}

var (
	sqsARN = regexp.MustCompile(`^arn:aws:sqs:[^:]*:[^:]*:(.+)$`)
	sqsURL = regexp.MustCompile(`^https://sqs\.[^/]+/[^/]+/([^/]+)$`)
)

// notLocal is the error for a reference to a resource (or one of its attributes) the kit
// has no local value for.
func (d *Deployment) notLocal(id, attr string) error {
	typ, ok := d.Template.types[id]
	if !ok {
		return &cfn.Unresolved{What: id, Why: "which is not a resource or parameter of the template"}
	}
	what := id + " (" + typ + ")"
	if attr != "" {
		return &cfn.Unresolved{What: id + "." + attr + " (" + typ + ")", Why: "an attribute the local kit has no value for"}
	}
	return &cfn.Unresolved{What: what, Why: "which the local kit does not create"}
}

// FunctionName is the name a function of the template has locally: its logical id and the
// deployment's suffix (what Ref of it and the Lambda stand-in's names are); in an Attached
// deployment, its deployed name.
func (d *Deployment) FunctionName(id string) string {
	if name, ok := d.Functions[id]; ok {
		return name
	}
	return id + "-" + d.Suffix
}

// Account is the account id the deployment's ARNs carry (the SQS server's).
func (d *Deployment) Account() string { return d.account }

// AlarmName is the name an alarm or composite alarm of the template has locally: its
// AlarmName when the template gives one, else its logical id and the deployment's suffix
// (CloudFormation names it after the stack too: two stacks' alarms never share a name).
func (d *Deployment) AlarmName(id string) string {
	for _, a := range d.Template.Alarms {
		if a.Name != "" && a.Name == id { // a composite's rule may name a child by its AlarmName
			return id
		}
	}
	for _, a := range d.Template.Alarms {
		if a.LogicalID == id && a.Name != "" {
			return a.Name
		}
	}
	for _, c := range d.Template.Composites {
		if c.LogicalID == id && c.Name != "" {
			return c.Name
		}
	}
	return id + "-" + d.Suffix
}

// LocalName is what Ref of a function, a schedule or an alarm gives locally: its name.
func (d *Deployment) LocalName(id string) string {
	t := d.Template
	if _, ok := t.Functions[id]; ok {
		return d.FunctionName(id)
	}
	for _, s := range t.Schedules {
		if s.LogicalID == id {
			return id + "-" + d.Suffix
		}
	}
	for _, s := range t.SendSchedules {
		if s.LogicalID == id {
			return id + "-" + d.Suffix
		}
	}
	for _, a := range t.Alarms {
		if a.LogicalID == id {
			return d.AlarmName(id)
		}
	}
	for _, c := range t.Composites {
		if c.LogicalID == id {
			return d.AlarmName(id)
		}
	}
	return ""
}
