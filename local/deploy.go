package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
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
	// Ignored lists the template properties that have no local meaning (encryption,
	// backups, tags), so a reader of the test log knows what was not exercised.
	Ignored []string

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
	d := &Deployment{
		Template: t, Suffix: suffix,
		QueueURL: map[string]string{}, QueueARN: map[string]string{}, QueueName: map[string]string{},
		TableName: map[string]string{}, byName: map[string]string{},
		Ignored: slices.Clone(t.NotApplied),
	}
	ids := slices.Sorted(maps.Keys(t.Queues))
	// Pass 1: every queue with its plain attributes, so that every ARN exists for pass 2.
	for _, id := range ids {
		q := t.Queues[id]
		attrs := map[string]string{}
		for k, v := range q.Props {
			switch {
			case slices.Contains(plainQueueAttrs, k):
				attrs[k] = scalar(v)
			case k == "QueueName", k == "RedrivePolicy", k == "RedriveAllowPolicy":
			case ignoredQueueProps[k]:
				d.ignore("queue " + id + " " + k)
			default:
				return nil, fmt.Errorf("queue %s: property %s is not understood by the local kit (package local), which never creates something other than the template says: remove it, or report it to the project so the kit learns what it means", id, k)
			}
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
			resolved, err := d.resolve(v)
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
	return d, nil
}

func (d *Deployment) ignore(what string) {
	if !slices.Contains(d.Ignored, what) {
		d.Ignored = append(d.Ignored, what)
	}
}

func (d *Deployment) localQueueName(q Queue) string {
	base, _ := q.Props["QueueName"].(string)
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
	for k, v := range tb.Props {
		raw, _ := json.Marshal(v)
		var err error
		switch k {
		case "KeySchema":
			err = json.Unmarshal(raw, &in.KeySchema)
		case "AttributeDefinitions":
			err = json.Unmarshal(raw, &in.AttributeDefinitions)
		case "BillingMode":
			switch v {
			case "PAY_PER_REQUEST":
			case "PROVISIONED":
				in.BillingMode = dbtypes.BillingModeProvisioned
			default:
				return fmt.Errorf("table %s: BillingMode %v: the local kit knows PAY_PER_REQUEST and PROVISIONED", tb.LogicalID, v)
			}
		case "ProvisionedThroughput":
			// A provisioned table (CloudFormation's default billing mode when BillingMode is
			// absent). DynamoDB Local takes the capacity and does not enforce it: throttling
			// is what the scenarios inject through the proxy; the auto scaling resources
			// (AWS::ApplicationAutoScaling::*) have no local meaning.
			in.BillingMode = dbtypes.BillingModeProvisioned
			in.ProvisionedThroughput = new(dbtypes.ProvisionedThroughput)
			err = json.Unmarshal(raw, in.ProvisionedThroughput)
			d.ignore("table " + tb.LogicalID + " ProvisionedThroughput (not enforced by DynamoDB Local) and its auto scaling")
		case "TimeToLiveSpecification":
			ttl = new(dbtypes.TimeToLiveSpecification)
			err = json.Unmarshal(raw, ttl)
		case "TableName":
		default:
			if !ignoredTableProps[k] {
				return fmt.Errorf("table %s: property %s is not understood by the local kit (package local), which never creates something other than the template says: remove it, or report it to the project so the kit learns what it means", tb.LogicalID, k)
			}
			d.ignore("table " + tb.LogicalID + " " + k)
		}
		if err != nil {
			return fmt.Errorf("table %s %s: %w", tb.LogicalID, k, err)
		}
	}
	name, _ := tb.Props["TableName"].(string)
	if name == "" {
		name = tb.LogicalID
	}
	name += "-" + d.Suffix
	in.TableName = aws.String(name)
	if _, err := db.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("create table %s: %w", tb.LogicalID, err)
	}
	if ttl != nil {
		if _, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: in.TableName, TimeToLiveSpecification: ttl}); err != nil {
			return fmt.Errorf("table %s TTL: %w", tb.LogicalID, err)
		}
	}
	d.TableName[tb.LogicalID] = name
	return nil
}

// Env returns a function's environment with every value resolved against this deployment.
func (d *Deployment) Env(function string) (map[string]string, error) {
	f, ok := d.Template.Functions[function]
	if !ok {
		return nil, fmt.Errorf("no function %s", function)
	}
	env := map[string]string{}
	for k, v := range f.Env {
		r, err := d.resolve(v)
		if err != nil {
			return nil, fmt.Errorf("function %s %s: %w", function, k, err)
		}
		s, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("function %s %s: resolved to %T, want a string", function, k, r)
		}
		env[k] = s
	}
	return env, nil
}

var (
	sqsARN = regexp.MustCompile(`^arn:aws:sqs:[^:]*:[^:]*:(.+)$`)
	sqsURL = regexp.MustCompile(`^https://sqs\.[^/]+/[^/]+/([^/]+)$`)
)

// resolve evaluates the CloudFormation intrinsics the templates use: Ref and Fn::GetAtt of
// queues and tables, the AWS:: pseudo parameters, Fn::Join. An SQS ARN built from a template
// queue name (as redrive-allow policies are) is rewritten to the local queue's ARN.
func (d *Deployment) resolve(v any) (any, error) {
	switch x := v.(type) {
	case string, float64, bool, nil:
		if s, ok := x.(string); ok {
			if m := sqsARN.FindStringSubmatch(s); m != nil { // a template or imported queue's ARN, by name
				if id, ok := d.byName[m[1]]; ok {
					return d.QueueARN[id], nil
				}
			}
			if m := sqsURL.FindStringSubmatch(s); m != nil { // an imported queue's URL
				if id, ok := d.byName[m[1]]; ok {
					return d.QueueURL[id], nil
				}
			}
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := d.resolve(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					return d.ref(arg)
				case "Fn::GetAtt":
					return d.getAtt(arg)
				case "Fn::Join", "Fn::Select", "Fn::Split":
					r, err := d.intrinsic(k, arg)
					if err != nil || k != "Fn::Join" {
						return r, err
					}
					return d.resolve(r) // the joined string may be a template queue's ARN or URL
				}
				if strings.HasPrefix(k, "Fn::") {
					return nil, fmt.Errorf("intrinsic %s is not supported by the local kit (package local)", k)
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			r, err := d.resolve(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected template value %T", v)
}

func (d *Deployment) ref(arg any) (any, error) {
	id, _ := arg.(string)
	switch id {
	case "AWS::AccountId":
		return d.account, nil
	case "AWS::Region":
		return d.region, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	if url, ok := d.QueueURL[id]; ok {
		return url, nil
	}
	if name, ok := d.TableName[id]; ok {
		return name, nil
	}
	if name := d.localName(id); name != "" {
		return name, nil
	}
	return nil, fmt.Errorf("Ref %q: not a queue, table, function, schedule or alarm of this deployment", id)
}

// FunctionName is the name a function of the template has locally: its logical id and the
// deployment's suffix (what Ref of it and the Lambda stand-in's names are).
func (d *Deployment) FunctionName(id string) string { return id + "-" + d.Suffix }

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

// localName is what Ref of a function, a schedule or an alarm gives locally: its name.
func (d *Deployment) localName(id string) string {
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

func (d *Deployment) getAtt(arg any) (any, error) {
	a, _ := arg.([]any)
	if len(a) != 2 {
		return nil, fmt.Errorf("Fn::GetAtt %v: want [id, attribute]", arg)
	}
	id, _ := a[0].(string)
	attr, _ := a[1].(string)
	switch {
	case attr == "Arn" && d.QueueARN[id] != "":
		return d.QueueARN[id], nil
	case attr == "QueueUrl" && d.QueueURL[id] != "":
		return d.QueueURL[id], nil
	case attr == "QueueName" && d.QueueName[id] != "":
		return d.QueueName[id], nil
	case attr == "Arn" && d.TableName[id] != "":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", d.region, d.account, d.TableName[id]), nil
	}
	return nil, fmt.Errorf("Fn::GetAtt %s.%s: not resolvable in this deployment", id, attr)
}

// intrinsic evaluates Fn::Join, Fn::Select (of an imported queue's ARN: its name, region,
// account) or Fn::Split with the deployment's values, keeping the first error of an
// argument as the cause.
func (d *Deployment) intrinsic(name string, arg any) (any, error) {
	var inner error
	eval := func(v any) (any, bool) {
		r, err := d.resolve(v)
		if err != nil && inner == nil {
			inner = err
		}
		return r, err == nil
	}
	fn := map[string]func(any, func(any) (any, bool)) (any, bool){"Fn::Join": evalJoin, "Fn::Select": evalSelect, "Fn::Split": evalSplit}[name]
	if r, ok := fn(arg, eval); ok {
		return r, nil
	}
	b, _ := json.Marshal(arg)
	if inner != nil {
		return nil, fmt.Errorf("%s %s: %w", name, b, inner)
	}
	return nil, fmt.Errorf("%s %s: not resolvable in this deployment", name, b)
}

func scalar(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
