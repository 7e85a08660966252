package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// storeService maps the data store types to the IAM service prefix of their actions.
var storeService = map[string]string{
	"AWS::SQS::Queue":      "sqs",
	"AWS::DynamoDB::Table": "dynamodb",
	"AWS::SNS::Topic":      "sns",
	"AWS::Logs::LogGroup":  "logs",
	"AWS::S3::Bucket":      "s3",
	"AWS::KMS::Key":        "kms",
}

// An encryption row says how one data store is encrypted at rest, and with which key.
type encryption struct {
	ID, Type string
	// At is the kind of encryption at rest, "none" when there is none.
	At string
	// Key is the key used: a logical id, an alias or ARN, or who owns it.
	Key string
}

// encryptions lists the encryption of every queue, table, topic, log group and bucket of s.
func encryptions(s *stack) []encryption {
	var out []encryption
	for _, id := range s.IDs {
		r := s.Resources[id]
		p := r.Properties
		e := encryption{ID: id, Type: r.Type}
		switch r.Type {
		case "AWS::SQS::Queue":
			switch sse, set := p["SqsManagedSseEnabled"].(bool); {
			case p["KmsMasterKeyId"] != nil:
				e.At, e.Key = "SSE-KMS", keyName(s, p["KmsMasterKeyId"])
			case set && sse:
				e.At, e.Key = "SSE-SQS", "SQS owned key"
			case set:
				e.At = "none (SqsManagedSseEnabled false)"
			default:
				e.At, e.Key = "SSE-SQS (not set in the template: SQS's default for new queues)", "SQS owned key"
			}
		case "AWS::DynamoDB::Table":
			enabled, _ := cfn.Dig(p, "SSESpecification", "SSEEnabled").(bool)
			switch key := cfn.Dig(p, "SSESpecification", "KMSMasterKeyId"); {
			case enabled && key != nil:
				e.At, e.Key = "SSE-KMS", keyName(s, key)
			case enabled:
				e.At, e.Key = "SSE-KMS", "AWS managed key aws/dynamodb"
			default:
				e.At, e.Key = "DynamoDB default encryption", "AWS owned key"
			}
		case "AWS::SNS::Topic":
			if k := p["KmsMasterKeyId"]; k != nil {
				e.At, e.Key = "SSE-KMS", keyName(s, k)
			} else {
				e.At = "none"
			}
		case "AWS::Logs::LogGroup":
			if k := p["KmsKeyId"]; k != nil {
				e.At, e.Key = "KMS", keyName(s, k)
			} else {
				e.At, e.Key = "CloudWatch Logs default encryption", "CloudWatch Logs service key"
			}
		case "AWS::S3::Bucket":
			rule := cfn.Dig(firstOf(cfn.Dig(p, "BucketEncryption", "ServerSideEncryptionConfiguration")), "ServerSideEncryptionByDefault")
			if alg := show(cfn.Dig(rule, "SSEAlgorithm")); alg != "" {
				e.At, e.Key = alg, keyName(s, cfn.Dig(rule, "KMSMasterKeyID"))
				if e.Key == "" {
					e.Key = "AWS managed key"
				}
			} else {
				e.At, e.Key = "SSE-S3 (not set in the template: S3's default)", "S3 owned key"
			}
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

func firstOf(v any) any {
	if l := list(v); len(l) > 0 {
		return l[0]
	}
	return nil
}

// keyName names a key reference: the logical id of a key in the stack, with its rotation,
// else the value as written (an alias or ARN).
func keyName(s *stack, v any) string {
	if v == nil {
		return ""
	}
	id := cfn.RefTarget(v)
	r, ok := s.Resources[id]
	if !ok || r.Type != "AWS::KMS::Key" {
		return show(v)
	}
	if rot, _ := r.Properties["EnableKeyRotation"].(bool); rot {
		return id + " (rotation on)"
	}
	return id + " (rotation off)"
}

// A retention row says how long a stateful resource keeps its data and what happens to it
// when the stack deletes or replaces the resource.
type retention struct {
	ID, Type, Keeps, Deletion, Replace string
}

// retentions lists every stateful resource of s, and any other with an explicit
// DeletionPolicy.
func retentions(s *stack) []retention {
	var out []retention
	for _, id := range s.IDs {
		r := s.Resources[id]
		p := r.Properties
		var keeps []string
		switch r.Type {
		case "AWS::SQS::Queue":
			if v, ok := p["MessageRetentionPeriod"].(float64); ok {
				keeps = append(keeps, "messages "+duration(v))
			} else {
				keeps = append(keeps, "messages 4 days (default)")
			}
		case "AWS::DynamoDB::Table":
			if attr := cfn.Dig(p, "TimeToLiveSpecification", "AttributeName"); cfn.Dig(p, "TimeToLiveSpecification", "Enabled") == true {
				keeps = append(keeps, "items until their TTL ("+show(attr)+")")
			} else {
				keeps = append(keeps, "items forever (no TTL)")
			}
			keeps = append(keeps, onOff("point-in-time recovery", cfn.Dig(p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled")))
			keeps = append(keeps, onOff("deletion protection", p["DeletionProtectionEnabled"]))
		case "AWS::Logs::LogGroup":
			if v, ok := p["RetentionInDays"].(float64); ok {
				keeps = append(keeps, "events "+duration(v*86400))
			} else {
				keeps = append(keeps, "events forever (no retention set)")
			}
		case "AWS::KMS::Key":
			if v, ok := p["PendingWindowInDays"].(float64); ok {
				keeps = append(keeps, fmt.Sprintf("%s pending window before deletion", duration(v*86400)))
			} else {
				keeps = append(keeps, "30 days pending window before deletion (default)")
			}
		case "AWS::S3::Bucket":
			keeps = append(keeps, "versioning "+strings.ToLower(orDefault(show(cfn.Dig(p, "VersioningConfiguration", "Status")), "off")))
			keeps = append(keeps, plural(len(list(cfn.Dig(p, "LifecycleConfiguration", "Rules"))), "lifecycle rule", "lifecycle rules"))
		default:
			if r.DeletionPolicy == "" {
				continue
			}
		}
		out = append(out, retention{
			ID: id, Type: r.Type, Keeps: strings.Join(keeps, "; "),
			Deletion: orDefault(r.DeletionPolicy, "Delete (default)"),
			Replace:  orDefault(r.UpdateReplacePolicy, "Delete (default)"),
		})
	}
	return out
}

func onOff(what string, v any) string {
	if v == true {
		return what + " on"
	}
	return what + " off"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// duration renders seconds in the largest whole unit: 14 days, 6 hours, 5 min, 45 s.
func duration(sec float64) string {
	n := int64(sec)
	for _, u := range []struct {
		size int64
		one  string
		many string
	}{{86400, "day", "days"}, {3600, "hour", "hours"}, {60, "min", "min"}} {
		if n >= u.size && n%u.size == 0 {
			if n == u.size {
				return "1 " + u.one
			}
			return fmt.Sprintf("%d %s", n/u.size, u.many)
		}
	}
	return fmt.Sprintf("%d s", n)
}

// A grant is what one principal may do to one data store.
type grant struct {
	Store, Principal string
	Actions          []string
	// Via is the logical id of the policy that grants it.
	Via string
}

// access lists, per data store of s, every Allow statement that names it (or names * with
// an action of the store's service, or is the store's own key policy).
func access(s *stack, sts []statement) []grant {
	var out []grant
	for _, id := range s.IDs {
		svc, ok := storeService[s.Resources[id].Type]
		if !ok || svc == "logs" {
			continue
		}
		for _, st := range sts {
			if st.Effect != "Allow" || st.Kind == "trust" || st.Kind == "managed" || st.NotResource {
				continue
			}
			if names(st, id) || (st.Holder == id) || (st.Kind == "identity" && contains(st.Resources, "*") && ofService(st.Actions, svc)) {
				out = append(out, grant{Store: id, Principal: st.Principal, Actions: st.Actions, Via: st.Holder})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Store != out[j].Store {
			return out[i].Store < out[j].Store
		}
		return out[i].Principal < out[j].Principal
	})
	return out
}

func names(st statement, id string) bool {
	for _, r := range st.Resources {
		if strings.Contains(r, "<"+id+">") || strings.Contains(r, "<"+id+".") {
			return true
		}
	}
	return false
}

func contains(items []string, s string) bool {
	for _, i := range items {
		if i == s {
			return true
		}
	}
	return false
}

func ofService(actions []string, svc string) bool {
	for _, a := range actions {
		if a == "*" || strings.HasPrefix(a, svc+":") {
			return true
		}
	}
	return false
}
