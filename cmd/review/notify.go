package main

import (
	"regexp"
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// severityOf reads the severity an alarm description ends with ("Severity: page."), as
// constructs/monitoring writes it; "" when it names none.
var severityOf = regexp.MustCompile(`Severity: ([a-z]+)`)

// A topic row says who an SNS topic reaches and which alarms notify it.
type topic struct {
	ID string
	// Subscriptions are "protocol endpoint", from the topic's Subscription property and
	// the stack's AWS::SNS::Subscription resources.
	Subscriptions []string
	// Alarms counts the alarms whose actions name the topic, per severity ("" unnamed).
	Alarms map[string]int
}

func (t topic) alarmCount() int {
	n := 0
	for _, c := range t.Alarms {
		n += c
	}
	return n
}

// topics lists every SNS topic of s with its subscriptions and the alarms that notify it.
func topics(s *stack, as []alarm) []topic {
	byID := map[string]*topic{}
	var out []*topic
	for _, id := range s.IDs {
		r := s.Resources[id]
		if r.Type != "AWS::SNS::Topic" {
			continue
		}
		t := &topic{ID: id, Alarms: map[string]int{}}
		for _, sub := range list(r.Properties["Subscription"]) {
			t.Subscriptions = append(t.Subscriptions, show(cfn.Dig(sub, "Protocol"))+" "+show(cfn.Dig(sub, "Endpoint")))
		}
		byID[id] = t
		out = append(out, t)
	}
	for _, id := range s.IDs {
		r := s.Resources[id]
		if r.Type != "AWS::SNS::Subscription" {
			continue
		}
		if t := byID[refOrShow(r.Properties["TopicArn"])]; t != nil {
			t.Subscriptions = append(t.Subscriptions, show(r.Properties["Protocol"])+" "+show(r.Properties["Endpoint"]))
		}
	}
	for _, a := range as {
		for _, target := range a.Targets {
			if t := byID[target]; t != nil {
				t.Alarms[a.Severity]++
			}
		}
	}
	res := make([]topic, len(out))
	for i, t := range out {
		sort.Strings(t.Subscriptions)
		res[i] = *t
	}
	return res
}

// deletionLosses lists what deleting the stack deletes with its data: each stateful
// resource whose DeletionPolicy is Delete, by what it holds.
func deletionLosses(rs []retention) map[string][]string {
	out := map[string][]string{}
	for _, r := range rs {
		if !strings.HasPrefix(r.Deletion, "Delete") {
			continue
		}
		switch r.Type {
		case "AWS::SQS::Queue":
			out["queues, with the messages they hold"] = append(out["queues, with the messages they hold"], r.ID)
		case "AWS::DynamoDB::Table":
			out["tables, with their items"] = append(out["tables, with their items"], r.ID)
		case "AWS::Logs::LogGroup":
			out["log groups, with their events"] = append(out["log groups, with their events"], r.ID)
		case "AWS::S3::Bucket":
			out["buckets, with their objects"] = append(out["buckets, with their objects"], r.ID)
		case "AWS::KMS::Key":
			out["keys (after their pending window), and with them what they encrypt"] = append(out["keys (after their pending window), and with them what they encrypt"], r.ID)
		}
	}
	return out
}

// resourcePolicyReasons are the reasons for the wildcards of resource policies that
// cdk-nag does not check (it reads identity policies only), by wildcard.
var resourcePolicyReasons = map[string]string{
	"Action::kms:*": "the key policy's default statement for the account root: the account's IAM policies decide who may use and " +
		"administer the key, so it can never become unmanageable; no role gets the key through it without an IAM policy of its own",
	"Action::kms:GenerateDataKey*": "GenerateDataKey and GenerateDataKeyWithoutPlaintext, what a service needs to encrypt with the key " +
		"(CloudWatch publishing to an encrypted SNS topic); the statement names the service and this key only",
}
