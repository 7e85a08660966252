package monitoring

import (
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// PipelineMonitoringProps configures NewPipelineMonitoring. Every field is optional; the zero
// value of a field means its default.
type PipelineMonitoringProps struct {
	// Topic receives every alarm notification (ALARM, and OK with NotifyOnOK).
	//
	// Default: a new standard topic, encrypted with a new customer-managed KMS key (rotation
	// on) whose key policy lets cloudwatch.amazonaws.com use it (kms:Decrypt,
	// kms:GenerateDataKey*), and a topic policy that denies non-TLS requests and lets
	// CloudWatch alarms of this account and Region publish.
	//
	// When you pass your own topic, it is used as it is: if it is encrypted, its key must be
	// a customer-managed key whose policy grants cloudwatch.amazonaws.com kms:Decrypt and
	// kms:GenerateDataKey*. The AWS managed key alias/aws/sns does NOT allow that (and its
	// policy cannot be edited), so alarms on a topic encrypted with it fail to notify: the
	// alarm history shows "CloudWatch Alarms does not have authorization to access the SNS
	// topic encryption key". If the topic has a resource policy, it must allow
	// cloudwatch.amazonaws.com to sns:Publish.
	Topic awssns.ITopic

	// AlarmEmails are subscribed to the topic (each recipient must confirm the subscription
	// email before notifications arrive). Bare addresses only: "oncall@example.com", not
	// "On call <oncall@example.com>".
	//
	// Default: no subscriptions (subscribe a pager or chat integration to Topic() yourself).
	AlarmEmails []string

	// DashboardName names the CloudWatch dashboard: 1-255 letters, digits, "-" or "_".
	//
	// Default: a name CloudFormation generates (unique per stack).
	DashboardName string

	// MetricsNamespace is the CloudWatch namespace the consumer and dispatcher functions
	// publish their Embedded Metric Format counters in (their METRICS_NAMESPACE), with the
	// dimension Service = the function name.
	//
	// Default: "IdempotentSQS".
	MetricsNamespace string

	// OldestMessageAge is the age of the oldest message on a watched source queue that raises
	// the "oldest message" alarm (ApproximateAgeOfOldestMessage). It is compared once per
	// AlarmPeriod: the age itself is the time the condition has held. From 1m to 14 days.
	//
	// Default: 15m.
	OldestMessageAge time.Duration

	// QueueDepth is the number of visible messages on a watched source queue that raises the
	// "backlog" alarm when it holds for BacklogEvaluationPeriods consecutive periods.
	//
	// Default: 1000.
	QueueDepth int

	// AlarmPeriod is the period of every alarm except the dead-letter queue alarms (which
	// use 1 minute so a message in a DLQ notifies at once). A whole number of minutes.
	//
	// Default: 5m.
	AlarmPeriod time.Duration

	// BacklogEvaluationPeriods is how many consecutive AlarmPeriods a source queue must stay at
	// or above QueueDepth visible messages (the minimum within each period) before the backlog
	// alarm fires: a burst the consumer drains does not page anyone.
	//
	// Default: 3 (15 minutes with the default period).
	BacklogEvaluationPeriods int

	// StalledConsumerPeriods is how many consecutive AlarmPeriods a consumer's source queue
	// must hold messages while deleting none before the "stalled consumer" alarm fires. Keep
	// the window longer than the consumer's function timeout, so that one slow but healthy
	// batch does not raise it.
	//
	// Default: 4 (20 minutes with the default period: longer than Lambda's 15-minute maximum
	// timeout).
	StalledConsumerPeriods int

	// NotifyOnOK also sends a notification when an alarm returns to OK.
	//
	// Default: false (only ALARM transitions notify).
	NotifyOnOK bool
}

// settings are the props with every default applied: the one place defaults live.
type settings struct {
	topic            awssns.ITopic
	emails           []string
	dashboardName    string
	namespace        string
	oldestMessageAge time.Duration
	queueDepth       int
	period           time.Duration
	backlogPeriods   int
	stallPeriods     int
	notifyOnOK       bool
}

const (
	defaultMetricsNamespace       = "IdempotentSQS"
	defaultOldestMessageAge       = 15 * time.Minute
	defaultQueueDepth             = 1000
	defaultAlarmPeriod            = 5 * time.Minute
	defaultBacklogPeriods         = 3
	defaultStalledConsumerPeriods = 4

	// deadLetterPeriod is fixed: a DLQ message is never noise, so its alarm is immediate.
	deadLetterPeriod = time.Minute

	maxMessageAge = 14 * 24 * time.Hour // SQS maximum retention: no message can be older
)

func withDefaults(p *PipelineMonitoringProps) settings {
	if p == nil {
		p = &PipelineMonitoringProps{}
	}
	s := settings{
		topic:            p.Topic,
		emails:           p.AlarmEmails,
		dashboardName:    p.DashboardName,
		namespace:        p.MetricsNamespace,
		oldestMessageAge: p.OldestMessageAge,
		queueDepth:       p.QueueDepth,
		period:           p.AlarmPeriod,
		backlogPeriods:   p.BacklogEvaluationPeriods,
		stallPeriods:     p.StalledConsumerPeriods,
		notifyOnOK:       p.NotifyOnOK,
	}
	if s.namespace == "" {
		s.namespace = defaultMetricsNamespace
	}
	if s.oldestMessageAge == 0 {
		s.oldestMessageAge = defaultOldestMessageAge
	}
	if s.queueDepth == 0 {
		s.queueDepth = defaultQueueDepth
	}
	if s.period == 0 {
		s.period = defaultAlarmPeriod
	}
	if s.backlogPeriods == 0 {
		s.backlogPeriods = defaultBacklogPeriods
	}
	if s.stallPeriods == 0 {
		s.stallPeriods = defaultStalledConsumerPeriods
	}
	return s
}

var (
	dashboardNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	// Same rule the telemetry package applies to METRICS_NAMESPACE before it publishes.
	namespaceRe = regexp.MustCompile(`^[0-9A-Za-z._/#: -]{1,255}$`)
	labelRe     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// validate checks the settings (after defaults, so a zero field is never an error) and
// records every problem in p.
func (s settings) validate(p *validate.Problems) {
	seen := map[string]bool{}
	for i, e := range s.emails {
		prop := fmt.Sprintf("AlarmEmails[%d]", i)
		if validate.Unresolved(e) {
			continue
		}
		if !validEmail(e) {
			p.Add(prop, fmt.Sprintf("%q", e), `use a bare email address such as "oncall@example.com" (no display name, no angle brackets)`)
			continue
		}
		if seen[e] {
			p.Add(prop, fmt.Sprintf("%q", e), "remove the duplicate: the address is already in AlarmEmails and is subscribed once")
		}
		seen[e] = true
	}
	if s.dashboardName != "" && !validate.Unresolved(s.dashboardName) && !dashboardNameRe.MatchString(s.dashboardName) {
		p.Add("DashboardName", fmt.Sprintf("%q", s.dashboardName), "use 1-255 characters from A-Z, a-z, 0-9, \"-\" and \"_\", or leave it empty for a generated name")
	}
	if !validate.Unresolved(s.namespace) {
		switch {
		case !namespaceRe.MatchString(s.namespace):
			p.Add("MetricsNamespace", fmt.Sprintf("%q", s.namespace), "use 1-255 characters from A-Z, a-z, 0-9 and . _ / # : - or space, the same value as the functions' METRICS_NAMESPACE")
		case strings.HasPrefix(s.namespace, "AWS/"):
			p.Add("MetricsNamespace", fmt.Sprintf("%q", s.namespace), `the "AWS/" prefix is reserved for AWS services; use the functions' METRICS_NAMESPACE (default "IdempotentSQS")`)
		}
	}
	if s.oldestMessageAge < time.Minute || s.oldestMessageAge > maxMessageAge || s.oldestMessageAge%time.Second != 0 {
		p.Add("OldestMessageAge", s.oldestMessageAge, "use a whole number of seconds from 1m to 336h (14 days, the longest SQS retention), or 0 for the default 15m")
	}
	if s.queueDepth < 1 {
		p.Add("QueueDepth", s.queueDepth, "use a positive number of visible messages, or 0 for the default 1000")
	}
	periodOK := s.period >= time.Minute && s.period%time.Minute == 0
	if !periodOK {
		p.Add("AlarmPeriod", s.period, "use a whole number of minutes (AWS service metrics have 1-minute resolution), or 0 for the default 5m")
	}
	for _, e := range []struct {
		prop string
		n    int
		def  int
	}{
		{"BacklogEvaluationPeriods", s.backlogPeriods, defaultBacklogPeriods},
		{"StalledConsumerPeriods", s.stallPeriods, defaultStalledConsumerPeriods},
	} {
		if e.n < 1 {
			p.Add(e.prop, e.n, fmt.Sprintf("use a positive number of periods, or 0 for the default %d", e.def))
			continue
		}
		if !periodOK {
			continue
		}
		if limit := evaluationLimit(s.period); time.Duration(e.n)*s.period > limit {
			p.Addf(e.prop, "%d periods of AlarmPeriod %s span %s, over CloudWatch's limit of %s for this period (24h for periods under 1h, 168h otherwise); use fewer periods or a shorter AlarmPeriod",
				e.n, s.period, time.Duration(e.n)*s.period, limit)
		}
	}
}

// evaluationLimit is PutMetricAlarm's cap on Period x EvaluationPeriods.
func evaluationLimit(period time.Duration) time.Duration {
	if period < time.Hour {
		return 24 * time.Hour
	}
	return 7 * 24 * time.Hour
}

func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && strings.Contains(s[at+1:], ".")
}
