package monitoring

import (
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// PipelineMonitoringProps configures NewPipelineMonitoring. Every field is optional; the zero
// value of a field means its default.
type PipelineMonitoringProps struct {
	// Topic is the paging topic: it receives the notifications of the alarms that mean work
	// is lost or stuck and someone must act now (ALARM, and OK with NotifyOnOK): a message in
	// a dead-letter queue, a stalled consumer, a failed dispatcher run, a dropped or
	// dead-lettered schedule invocation. Subscribe the pager to it.
	//
	// Default: a new standard topic, encrypted with EncryptionKey or else a new
	// customer-managed KMS key (rotation on) whose key policy lets cloudwatch.amazonaws.com
	// use it (kms:Decrypt, kms:GenerateDataKey*), and a topic policy that denies non-TLS
	// requests and lets CloudWatch alarms of this account and Region publish.
	//
	// When you pass your own topic, it is used as it is: if it is encrypted, its key must be
	// a customer-managed key whose policy grants cloudwatch.amazonaws.com kms:Decrypt and
	// kms:GenerateDataKey*. The AWS managed key alias/aws/sns does NOT allow that (and its
	// policy cannot be edited), so alarms on a topic encrypted with it fail to notify: the
	// alarm history shows "CloudWatch Alarms does not have authorization to access the SNS
	// topic encryption key". If the topic has a resource policy, it must allow
	// cloudwatch.amazonaws.com to sns:Publish.
	Topic awssns.ITopic

	// TicketTopic is the ticketing topic: it receives the notifications of the alarms that
	// mean the pipeline is degraded but retrying on its own, for the next working day:
	// message age, backlog, throttles, and errors that are retried (function errors, schedule
	// target errors, DynamoDB system errors). The same requirements as for Topic apply.
	//
	// Default: when Topic is nil, a second new topic built like the default Topic (same key);
	// when Topic is given, Topic itself, so that a single given topic keeps receiving every
	// alarm.
	TicketTopic awssns.ITopic

	// AlarmEmails are subscribed to both topics, so they receive every alarm (each
	// recipient must confirm each subscription email before notifications arrive). Bare
	// addresses only: "oncall@example.com", not "On call <oncall@example.com>".
	//
	// Default: no subscriptions (subscribe a pager to Topic() and a ticket queue to
	// TicketTopic() yourself).
	AlarmEmails []string

	// TicketEmails are subscribed to the ticketing topic only. They need a ticketing topic
	// of its own: not allowed when Topic is given without TicketTopic.
	//
	// Default: no subscriptions.
	TicketEmails []string

	// EncryptionKey encrypts what this construct creates to deliver notifications: the
	// default topics and the queue that keeps the notifications email subscriptions could
	// not deliver. Give it to keep every part of a pipeline under one customer managed key.
	//
	// When the key is created in the same app (awskms.NewKey), its key policy gets the grants
	// delivery needs: cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey* (alarms
	// publish to the encrypted topics), and, with AlarmEmails or TicketEmails,
	// sns.amazonaws.com kms:Decrypt and kms:GenerateDataKey* (SNS writes undeliverable
	// notifications to the encrypted queue), each limited to this account. An imported key
	// (awskms.Key_FromKeyArn) cannot be changed by CDK: its key policy must already allow
	// both, or alarms fail to notify and the undelivered notifications are lost.
	//
	// With Topic given and no email addresses there is nothing for it to encrypt, which is
	// an error.
	//
	// Default: a new key for the default topics (as described at Topic), and SSE-SQS for
	// the undelivered-notifications queue.
	EncryptionKey awskms.IKey

	// RunbookURL is the address of the runbooks (this repository's docs/runbooks.md, or
	// your copy of it): every alarm description ends with "Runbook: " + RunbookURL + "#" +
	// the anchor of the alarm's section. An absolute http or https URL without a fragment,
	// up to 256 characters.
	//
	// Default: DefaultRunbookURL.
	RunbookURL string

	// SlackWorkspaceId and SlackChannelId, both set, subscribe a Slack channel to both
	// topics through an AWS Chatbot Slack channel configuration (SlackChannel()). The
	// workspace must already be authorized in the AWS Chatbot console, which shows its id
	// (e.g. "T0123ABCD"); the channel id is the last part of the channel's link (e.g.
	// "C0123ABCD"). Private channels need the AWS Chatbot app invited to them.
	//
	// The configuration's role has no permissions and its guardrail is the AWS managed
	// CloudWatchReadOnlyAccess policy: the channel receives notifications, and nobody can
	// change AWS resources from Slack. Give the role permissions (SlackChannel().Role()) for commands.
	//
	// Default: no Slack channel.
	SlackWorkspaceId string
	SlackChannelId   string

	// SlackChannelConfigurationName names the AWS Chatbot configuration: 1-128 letters,
	// digits, "-" or "_", unique in the account. Only with SlackWorkspaceId and
	// SlackChannelId.
	//
	// Default: a name derived from the construct path and the Region (AWS Chatbot
	// configurations are global to the account).
	SlackChannelConfigurationName string

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
	ticketTopic      awssns.ITopic
	emails           []string
	ticketEmails     []string
	key              awskms.IKey
	runbookURL       string
	slackWorkspace   string
	slackChannel     string
	slackName        string
	dashboardName    string
	namespace        string
	oldestMessageAge time.Duration
	queueDepth       int
	period           time.Duration
	backlogPeriods   int
	stallPeriods     int
	notifyOnOK       bool
}

// DefaultRunbookURL is the runbooks' address when PipelineMonitoringProps.RunbookURL is
// empty: docs/runbooks.md in this repository.
const DefaultRunbookURL = "https://github.com/idempotent-sqs/pipeline/blob/main/docs/runbooks.md"

const (
	maxRunbookURLLen = 256 // keeps every alarm description within CloudWatch's 1024 characters

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
		ticketTopic:      p.TicketTopic,
		emails:           p.AlarmEmails,
		ticketEmails:     p.TicketEmails,
		key:              p.EncryptionKey,
		runbookURL:       p.RunbookURL,
		slackWorkspace:   p.SlackWorkspaceId,
		slackChannel:     p.SlackChannelId,
		slackName:        p.SlackChannelConfigurationName,
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
	if s.runbookURL == "" {
		s.runbookURL = DefaultRunbookURL
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
	// AWS::Chatbot::SlackChannelConfiguration's patterns.
	slackWorkspaceRe = regexp.MustCompile(`^[0-9A-Z]{1,255}$`)
	slackChannelRe   = regexp.MustCompile(`^[A-Za-z0-9]{1,256}$`)
	slackNameRe      = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

// validate checks the settings (after defaults, so a zero field is never an error) and
// records every problem in p.
func (s settings) validate(p *validate.Problems) {
	seen := map[string]bool{}
	s.validateEmails(p, "AlarmEmails", s.emails, seen, "")
	s.validateEmails(p, "TicketEmails", s.ticketEmails, seen, "AlarmEmails receive every alarm, ticketing ones included")
	if len(s.ticketEmails) > 0 && s.topic != nil && s.ticketTopic == nil {
		p.Add("TicketEmails", fmt.Sprintf("%d addresses", len(s.ticketEmails)), "a given Topic without TicketTopic receives every alarm, pages included; set TicketTopic too, or subscribe these addresses yourself")
	}
	if s.key != nil && s.topic != nil && len(s.emails)+len(s.ticketEmails) == 0 {
		p.Add("EncryptionKey", "a key", "it would encrypt nothing: with Topic given no topic is created, and without email subscriptions there is no undelivered-notifications queue; encrypt your topics with it yourself, or remove it")
	}
	if !validate.Unresolved(s.runbookURL) {
		if problem := runbookURLProblem(s.runbookURL); problem != "" {
			p.Add("RunbookURL", fmt.Sprintf("%q", s.runbookURL), problem)
		}
	}
	s.validateSlack(p)
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

// validateEmails checks one list of addresses; seen holds the addresses of the lists
// checked before it (dupWhy says why a repeat from them is one too many).
func (s settings) validateEmails(p *validate.Problems, prop string, emails []string, seen map[string]bool, dupWhy string) {
	local := map[string]bool{}
	for i, e := range emails {
		name := fmt.Sprintf("%s[%d]", prop, i)
		if validate.Unresolved(e) {
			continue
		}
		if !validEmail(e) {
			p.Add(name, fmt.Sprintf("%q", e), `use a bare email address such as "oncall@example.com" (no display name, no angle brackets)`)
			continue
		}
		switch {
		case local[e]:
			p.Add(name, fmt.Sprintf("%q", e), "remove the duplicate: the address is already in "+prop+" and is subscribed once")
		case seen[e]:
			p.Add(name, fmt.Sprintf("%q", e), "remove the duplicate: "+dupWhy)
		}
		local[e] = true
	}
	for e := range local {
		seen[e] = true
	}
}

// runbookURLProblem says what is wrong with a runbook address, or "" when nothing is.
func runbookURLProblem(raw string) string {
	const want = "use an absolute http or https URL without a fragment (each alarm adds its section's anchor), up to 256 characters, or leave it empty for DefaultRunbookURL"
	u, err := url.Parse(raw)
	switch {
	case err != nil, len(raw) > maxRunbookURLLen, u.Scheme != "https" && u.Scheme != "http", u.Host == "",
		u.Fragment != "" || strings.Contains(raw, "#"), strings.ContainsAny(raw, " \t\n"):
		return want
	}
	return ""
}

// validateSlack checks the AWS Chatbot props: both ids or none, each in CloudFormation's
// pattern, and a name only with them.
func (s settings) validateSlack(p *validate.Problems) {
	ws, ch, name := s.slackWorkspace, s.slackChannel, s.slackName
	if (ws == "") != (ch == "") {
		p.Add("SlackWorkspaceId/SlackChannelId", fmt.Sprintf("%q/%q", ws, ch), "set both to subscribe a Slack channel, or neither")
	}
	if ws != "" && !validate.Unresolved(ws) && !slackWorkspaceRe.MatchString(ws) {
		p.Add("SlackWorkspaceId", fmt.Sprintf("%q", ws), `use the workspace id the AWS Chatbot console shows: 1-255 capital letters and digits, such as "T0123ABCD"`)
	}
	if ch != "" && !validate.Unresolved(ch) && !slackChannelRe.MatchString(ch) {
		p.Add("SlackChannelId", fmt.Sprintf("%q", ch), `use the channel id (the last part of the channel's link), letters and digits such as "C0123ABCD", not its name`)
	}
	if name != "" {
		switch {
		case ws == "" && ch == "":
			p.Add("SlackChannelConfigurationName", fmt.Sprintf("%q", name), "it names a Slack channel configuration: set SlackWorkspaceId and SlackChannelId too, or remove it")
		case !validate.Unresolved(name) && !slackNameRe.MatchString(name):
			p.Add("SlackChannelConfigurationName", fmt.Sprintf("%q", name), `use 1-128 characters from A-Z, a-z, 0-9, "-" and "_", or leave it empty for a generated name`)
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
