// CloudFormation values, as the kit resolves them, all through one evaluator (cfn.Resolver):
// statically when it reads a template (the parameters' values and the pseudo parameters:
// Template.staticString), and against a deployment, planned or real, when it creates the
// resources and the functions' environments (Deployment.Resolve).

package standin

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// staticString is v as a string when the template alone says it: cfn's static mode with
// the values the parameters have (their defaults, or as given: UseParameters).
func (t *Template) staticString(v any) string {
	return cfn.Static(func(name string) (any, bool) {
		p, ok := t.Parameters[name]
		return p.value, ok && p.value != nil
	}).String(v)
}

// Resolve evaluates v's intrinsics (cfn.Resolver) with the names, URLs and ARNs of this
// deployment: planned or real, as it was made. An SQS ARN or URL built from a queue's
// template name (as redrive-allow policies and imported queues are) is the local queue's.
func (d *Deployment) Resolve(v any) (any, error) {
	return cfn.Resolver{Ref: d.ref, GetAtt: d.getAtt, Import: d.importValue, Literal: d.literal}.Resolve(v)
}

// literal is a plain string of the template: a template or imported queue's ARN or URL, by
// name, is the local queue's.
func (d *Deployment) literal(s string) any {
	if m := sqsARN.FindStringSubmatch(s); m != nil {
		if id, ok := d.byName[m[1]]; ok {
			return d.QueueARN[id]
		}
	}
	if m := sqsURL.FindStringSubmatch(s); m != nil {
		if id, ok := d.byName[m[1]]; ok {
			return d.QueueURL[id]
		}
	}
	return s
}

func (d *Deployment) importValue(name any) (any, error) {
	s, ok := name.(string)
	if !ok || d.Import == nil {
		return nil, cfn.UnresolvedImport(name)
	}
	return d.Import(s)
}

func (d *Deployment) ref(id string) (any, error) {
	switch id {
	case "AWS::AccountId":
		return d.account, nil
	case "AWS::Region":
		return d.region, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return cmp.Or(d.StackName, d.Template.Name), nil
	}
	if url, ok := d.QueueURL[id]; ok {
		return url, nil
	}
	if name, ok := d.TableName[id]; ok {
		return name, nil
	}
	if arn, ok := d.TopicARN[id]; ok {
		return arn, nil
	}
	if arn, ok := d.SecretARN[id]; ok {
		return arn, nil
	}
	if name, ok := d.Bucket[id]; ok {
		return name, nil
	}
	if name := d.LocalName(id); name != "" {
		return name, nil
	}
	if p, ok := d.Template.Parameters[id]; ok {
		if p.value != nil {
			return p.value, nil
		}
		why := "which has no Default"
		if p.fromSSM() {
			why = fmt.Sprintf("whose value is read from Systems Manager parameter %s at deploy time", jsonish(p.Default))
		}
		return nil, &cfn.Unresolved{What: "parameter " + id + " (" + p.Type + ")", Why: why, Param: id}
	}
	return nil, d.notLocal(id, "")
}

func (d *Deployment) getAtt(id, attr string) (any, error) {
	switch {
	case attr == "Arn" && d.QueueARN[id] != "":
		return d.QueueARN[id], nil
	case attr == "QueueUrl" && d.QueueURL[id] != "":
		return d.QueueURL[id], nil
	case attr == "QueueName" && d.QueueName[id] != "":
		return d.QueueName[id], nil
	case attr == "Arn" && d.Bucket[id] != "":
		return "arn:aws:s3:::" + d.Bucket[id], nil
	case attr == "TopicArn" && d.TopicARN[id] != "":
		return d.TopicARN[id], nil
	case attr == "TopicName" && d.TopicARN[id] != "":
		return d.TopicARN[id][strings.LastIndex(d.TopicARN[id], ":")+1:], nil
	case attr == "Arn" && d.TableName[id] != "":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", d.region, d.account, d.TableName[id]), nil
	case strings.HasPrefix(attr, "Outputs.") && d.Template.types[id] == typeNestedStack && d.NestedOutput != nil:
		return d.NestedOutput(id, strings.TrimPrefix(attr, "Outputs."))
	}
	return nil, d.notLocal(id, attr)
}
