package stacks

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/internal/editdist"
)

// Config is what the CDK app reads from context (see stacks/app for the keys). Zero values
// take the documented defaults.
type Config struct {
	// Stage names the deployment; the stack is called IdempotentSqsPipeline-<Stage>.
	// Default "dev".
	Stage string
	// AlarmEmails are subscribed to both alarm topics (paging and ticketing). Default none
	// (subscribe later, or add any other subscriber to the topics).
	AlarmEmails []string
	// TicketEmails are subscribed to the ticketing topic only. Default none.
	TicketEmails []string
	// SlackWorkspaceID and SlackChannelID subscribe a Slack channel to both topics through
	// AWS Chatbot (the workspace must be authorized in the Chatbot console first). Both or
	// neither. Default none.
	SlackWorkspaceID, SlackChannelID string
	// Schedule is the dispatchers' cron expression in AWS's 6-field form.
	// Default "0 * * * ? *" (hourly).
	Schedule string
	// TimeZone is the IANA zone the schedule is evaluated in. Default "UTC".
	TimeZone string
	// ConsumerTimeout is the consumer functions' timeout. Default 30s.
	ConsumerTimeout time.Duration
	// VisibilityTimeout of both processing queues. Default 6 x ConsumerTimeout.
	VisibilityTimeout time.Duration
	// MaxMessageSize of both processing queues (and their DLQs), in bytes, which the
	// consumers take as MAX_BODY_BYTES. Default 262144; up to 1048576.
	MaxMessageSize int
	// TableCapacity is the idempotency table's capacity: nil for on-demand, or provisioned
	// with auto scaling (context tableCapacity=MIN-MAX write units, e.g. 5-500, optionally
	// @TARGET percent: 5-500@70). docs/capacity.md says when provisioned pays. Default nil.
	TableCapacity *table.ProvisionedCapacity
	// TableMaxWriteUnits caps an on-demand table's write request units a second (context
	// tableMaxWriteUnits; the table construct's MaxOnDemandThroughput): a bound on the
	// bill, paid for in throttles past it. docs/capacity.md sizes it. Default 0 (no cap).
	TableMaxWriteUnits int
	// ConsumerPollers puts both consumers' event source mappings in provisioned mode
	// (context consumerPollers=MIN-MAX event pollers, e.g. 2-20): faster scaling for spiky
	// queues, each poller billed. docs/capacity.md says when it pays. Default nil (the
	// default mode, capped by the consumer's MaxConcurrency).
	ConsumerPollers *consumer.ProvisionedPollers
	// ConsumerBatchSize and ConsumerBatchWindow are the standard pipeline's event source
	// mapping's batch size and batching window (a FIFO mapping takes at most 10 records and
	// no window, so the FIFO consumer keeps its defaults). Default 10 and none.
	ConsumerBatchSize   int
	ConsumerBatchWindow time.Duration
	// ConsumerMemoryMB and ConsumerMaxConcurrency set both consumers' memory and their
	// mappings' maximum concurrency (not with ConsumerPollers). Default 256 and 10.
	ConsumerMemoryMB, ConsumerMaxConcurrency int
	// Hardened turns on the pipelines' Hardening (functions in an isolated VPC with the
	// endpoints they need, log groups under a customer managed key, reserved concurrency,
	// the table in AWS Backup), for regulated reviews. Default false.
	Hardened bool
	// Heartbeat is how often each pipeline's heartbeat probe runs (whole minutes, 1m to
	// 12h), with an alarm that pages when none completes in two intervals in a row.
	// HeartbeatOff for none. Default DefaultHeartbeat (5m).
	Heartbeat time.Duration
	// Account and Region pin the stack's environment (context keys account and region).
	// Default: environment-agnostic, so the template is the same whoever synthesizes it,
	// and a deploy goes to the account and region of the deploying credentials. The CLI's
	// CDK_DEFAULT_ACCOUNT (which it fills by calling STS GetCallerIdentity when it finds
	// credentials) and CDK_DEFAULT_REGION are not used.
	Account, Region string
}

// The CDK context keys the app reads (cdk.json, or `cdk synth -c key=value`). The app's doc
// comment and docs/settings.md list each one, and a test keeps them in step with ContextKeys.
const (
	keyStage             = "stage"
	keyAlarmEmail        = "alarmEmail"
	keyTicketEmail       = "ticketEmail"
	keySlackWorkspace    = "slackWorkspace"
	keySlackChannel      = "slackChannel"
	keySchedule          = "schedule"
	keyTimeZone          = "timezone"
	keyConsumerTimeout   = "consumerTimeout"
	keyVisibilityTimeout = "visibilityTimeout"
	keyMaxMessageSize    = "maxMessageSize"
	keyHardened          = "hardened"
	keyHeartbeat         = "heartbeat"
	keyTableCapacity     = "tableCapacity"
	keyTableMaxWrites    = "tableMaxWriteUnits"
	keyConsumerPollers   = "consumerPollers"
	keyBatchSize         = "consumerBatchSize"
	keyBatchWindow       = "consumerBatchWindow"
	keyConsumerMemory    = "consumerMemory"
	keyMaxConcurrency    = "consumerMaxConcurrency"
	keyAccount           = "account"
	keyRegion            = "region"
)

// The context keys by their old Go names.
const (
	// Deprecated: the key is the string "stage" (ContextKeys lists every key).
	ContextStage = keyStage
	// Deprecated: the key is the string "alarmEmail" (ContextKeys lists every key).
	ContextAlarmEmail = keyAlarmEmail
	// Deprecated: the key is the string "ticketEmail" (ContextKeys lists every key).
	ContextTicketEmail = keyTicketEmail
	// Deprecated: the key is the string "slackWorkspace" (ContextKeys lists every key).
	ContextSlackWorkspace = keySlackWorkspace
	// Deprecated: the key is the string "slackChannel" (ContextKeys lists every key).
	ContextSlackChannel = keySlackChannel
	// Deprecated: the key is the string "schedule" (ContextKeys lists every key).
	ContextSchedule = keySchedule
	// Deprecated: the key is the string "timezone" (ContextKeys lists every key).
	ContextTimeZone = keyTimeZone
	// Deprecated: the key is the string "consumerTimeout" (ContextKeys lists every key).
	ContextConsumerTimeout = keyConsumerTimeout
	// Deprecated: the key is the string "visibilityTimeout" (ContextKeys lists every key).
	ContextVisibilityTimeout = keyVisibilityTimeout
	// Deprecated: the key is the string "maxMessageSize" (ContextKeys lists every key).
	ContextMaxMessageSize = keyMaxMessageSize
	// Deprecated: the key is the string "hardened" (ContextKeys lists every key).
	ContextHardened = keyHardened
	// Deprecated: the key is the string "heartbeat" (ContextKeys lists every key).
	ContextHeartbeat = keyHeartbeat
	// Deprecated: the key is the string "tableCapacity" (ContextKeys lists every key).
	ContextTableCapacity = keyTableCapacity
	// Deprecated: the key is the string "tableMaxWriteUnits" (ContextKeys lists every key).
	ContextTableMaxWrites = keyTableMaxWrites
	// Deprecated: the key is the string "consumerPollers" (ContextKeys lists every key).
	ContextConsumerPollers = keyConsumerPollers
	// Deprecated: the key is the string "consumerBatchSize" (ContextKeys lists every key).
	ContextBatchSize = keyBatchSize
	// Deprecated: the key is the string "consumerBatchWindow" (ContextKeys lists every key).
	ContextBatchWindow = keyBatchWindow
	// Deprecated: the key is the string "consumerMemory" (ContextKeys lists every key).
	ContextConsumerMemory = keyConsumerMemory
	// Deprecated: the key is the string "consumerMaxConcurrency" (ContextKeys lists every key).
	ContextMaxConcurrency = keyMaxConcurrency
	// Deprecated: the key is the string "account" (ContextKeys lists every key).
	ContextAccount = keyAccount
	// Deprecated: the key is the string "region" (ContextKeys lists every key).
	ContextRegion = keyRegion
)

// ContextKeys lists every context key ConfigFromContext reads.
var ContextKeys = []string{keyStage, keyAlarmEmail, keyTicketEmail, keySlackWorkspace, keySlackChannel, keySchedule, keyTimeZone, keyConsumerTimeout, keyVisibilityTimeout, keyMaxMessageSize, keyTableCapacity, keyTableMaxWrites, keyConsumerPollers, keyBatchSize, keyBatchWindow, keyConsumerMemory, keyMaxConcurrency, keyHardened, keyHeartbeat, keyAccount, keyRegion}

var (
	stagePattern   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,31}$`)
	accountPattern = regexp.MustCompile(`^[0-9]{12}$`)
	regionPattern  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
)

// ConfigFromContext reads Config from the app's context, reporting every bad value at once.
func ConfigFromContext(app awscdk.App) (Config, error) {
	c := &contextReader{node: app.Node()}
	cfg := Config{
		Stage:    c.str(keyStage),
		Schedule: c.str(keySchedule),
		TimeZone: c.str(keyTimeZone),
		// Monitoring validates both (format, and both or neither).
		SlackWorkspaceID: c.str(keySlackWorkspace),
		SlackChannelID:   c.str(keySlackChannel),
		Account:          c.str(keyAccount),
		Region:           c.str(keyRegion),
		AlarmEmails:      c.list(keyAlarmEmail),
		TicketEmails:     c.list(keyTicketEmail),
	}
	c.readConsumer(&cfg)
	c.readTable(&cfg)
	c.readSwitches(&cfg)
	c.checkKeys()
	cfg = cfg.withDefaults()
	if !stagePattern.MatchString(cfg.Stage) {
		c.bad("context stage: got %q; use a letter then up to 31 letters, digits or hyphens", cfg.Stage)
	}
	if cfg.Account != "" && !accountPattern.MatchString(cfg.Account) {
		c.bad("context account: got %q; use the 12-digit AWS account id, or leave it out for an environment-agnostic stack", cfg.Account)
	}
	if cfg.Region != "" && !regionPattern.MatchString(cfg.Region) {
		c.bad("context region: got %q; use a region code such as eu-west-1, or leave it out for an environment-agnostic stack", cfg.Region)
	}
	if len(c.errs) > 0 {
		sort.Strings(c.errs) // the readers' maps are iterated unordered
		return cfg, errors.New("invalid CDK context:\n  - " + strings.Join(c.errs, "\n  - "))
	}
	return cfg, nil
}

// contextReader reads the app's context keys, collecting every problem. It checks only what
// a key's text must be (a duration, a number); the ranges are the constructs' rules, which
// name their props.
type contextReader struct {
	node constructs.Node
	errs []string
}

func (c *contextReader) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// checkKeys refuses a context key that is not one of ContextKeys but is that close to one,
// ignoring case (Stage, consumerTimout, heartbeats): one edit away from a key shorter than
// 8 characters, two from a key of 8 or more. A typo would leave the setting at its default
// without a word. Other keys (CDK's feature flags, a key of your own that is not that close)
// pass.
func (c *contextReader) checkKeys() {
	all, _ := c.node.GetAllContext(nil).(map[string]any)
	for _, key := range slices.Sorted(maps.Keys(all)) {
		if slices.Contains(ContextKeys, key) {
			continue
		}
		for _, known := range ContextKeys {
			if editdist.Distance(strings.ToLower(key), strings.ToLower(known)) <= min(2, len(known)/4) {
				c.bad("context %s: not a key the app reads; did you mean %s? (docs/settings.md lists every key)", key, known)
				break
			}
		}
	}
}

// str is the key's value as text, trimmed ("" when unset).
func (c *contextReader) str(key string) string {
	v := c.node.TryGetContext(jsii.String(key))
	if v == nil {
		return ""
	}
	return strings.TrimSpace(fmt.Sprint(v))
}

// list is the key's comma-separated values, blanks dropped.
func (c *contextReader) list(key string) []string {
	var out []string
	for _, a := range strings.Split(c.str(key), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// readConsumer reads the consumer's and the queue's keys. The two combinations the consumer
// construct would refuse by its props' names are named here by the context keys that make
// them, which the construct cannot know.
func (c *contextReader) readConsumer(cfg *Config) {
	for key, dst := range map[string]*time.Duration{
		keyConsumerTimeout:   &cfg.ConsumerTimeout,
		keyVisibilityTimeout: &cfg.VisibilityTimeout,
	} {
		if s := c.str(key); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				c.bad("context %s: got %q; use a positive Go duration such as 30s or 5m", key, s)
				continue
			}
			*dst = d
		}
	}
	if s := c.str(keyBatchWindow); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			c.bad("context %s: got %q; use a Go duration of whole seconds up to 5m such as 1s, or leave it out for none", keyBatchWindow, s)
		}
		cfg.ConsumerBatchWindow = d
	}
	for key, dst := range map[string]*int{
		keyBatchSize:      &cfg.ConsumerBatchSize,
		keyConsumerMemory: &cfg.ConsumerMemoryMB,
		keyMaxConcurrency: &cfg.ConsumerMaxConcurrency,
	} {
		if s := c.str(key); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				c.bad("context %s: got %q; use a whole number, at least 1 (docs/capacity.md has a plan per load)", key, s)
			}
			*dst = n
		}
	}
	if s := c.str(keyMaxMessageSize); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			c.bad("context %s: got %q; use a whole number of bytes from 1024 to 1048576", keyMaxMessageSize, s)
		}
		cfg.MaxMessageSize = n
	}
	if s := c.str(keyConsumerPollers); s != "" {
		m := pollersPattern.FindStringSubmatch(s)
		if m == nil {
			c.bad("context %s: got %q; use MIN-MAX event pollers, e.g. 2-20 (provisioned mode), or leave it out for the default mode", keyConsumerPollers, s)
		} else {
			lo, _ := strconv.Atoi(m[1])
			hi, _ := strconv.Atoi(m[2])
			cfg.ConsumerPollers = &consumer.ProvisionedPollers{Minimum: lo, Maximum: hi}
		}
	}
	if cfg.ConsumerBatchSize > 10 && cfg.ConsumerBatchWindow == 0 && c.str(keyBatchWindow) == "" {
		c.bad("context %s: got %d; above 10 records an SQS event source needs a batching window: add %s=1s (or more)",
			keyBatchSize, cfg.ConsumerBatchSize, keyBatchWindow)
	}
	if cfg.ConsumerMaxConcurrency > 0 && cfg.ConsumerPollers != nil {
		c.bad("context %s and %s: set one; in provisioned mode the pollers' maximum x 10 bounds the concurrency",
			keyMaxConcurrency, keyConsumerPollers)
	}
}

// readTable reads the table's capacity keys.
func (c *contextReader) readTable(cfg *Config) {
	if s := c.str(keyTableCapacity); s != "" && s != "on-demand" {
		tc, err := parseTableCapacity(s)
		if err != nil {
			c.errs = append(c.errs, err.Error())
		}
		cfg.TableCapacity = tc
	}
	if s := c.str(keyTableMaxWrites); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			c.bad("context %s: got %q; use a whole number of write request units a second, at least 1 "+
				"(about 2 per new message a second at your peak), or leave it out for no cap", keyTableMaxWrites, s)
		}
		cfg.TableMaxWriteUnits = n
	}
}

// readSwitches reads the hardening and the heartbeat.
func (c *contextReader) readSwitches(cfg *Config) {
	switch s := c.str(keyHardened); s {
	case "", "false":
	case "true":
		cfg.Hardened = true
	default:
		c.bad("context %s: got %q; use true or false", keyHardened, s)
	}
	switch s := c.str(keyHeartbeat); s {
	case "":
	case "off":
		cfg.Heartbeat = HeartbeatOff
	default:
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			c.bad("context %s: got %q; use off, or a Go duration of whole minutes from 1m to 12h such as 5m (the default)", keyHeartbeat, s)
		}
		cfg.Heartbeat = d
	}
}

// DefaultHeartbeat is the reference stack's heartbeat interval; HeartbeatOff turns it off.
const (
	DefaultHeartbeat               = 5 * time.Minute
	HeartbeatOff     time.Duration = -1
)

// pollersPattern is MIN-MAX event pollers.
var pollersPattern = regexp.MustCompile(`^([0-9]+)-([0-9]+)$`)

// tableCapacityPattern is MIN-MAX write units, then optionally @TARGET utilization percent.
var tableCapacityPattern = regexp.MustCompile(`^([0-9]+)-([0-9]+)(?:@([0-9]+))?$`)

// parseTableCapacity reads the tableCapacity context value; the table construct checks
// the numbers, naming its props.
func parseTableCapacity(s string) (*table.ProvisionedCapacity, error) {
	m := tableCapacityPattern.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("context %s: got %q; use on-demand (the default), or provisioned write capacity units MIN-MAX with an optional @TARGET utilization percent, e.g. 5-500 or 5-500@70", keyTableCapacity, s)
	}
	n := func(x string) int { v, _ := strconv.Atoi(x); return v }
	c := &table.ProvisionedCapacity{MinWriteUnits: n(m[1]), MaxWriteUnits: n(m[2])}
	if m[3] != "" {
		c.TargetUtilizationPercent = n(m[3])
	}
	return c, nil
}

func (c Config) withDefaults() Config {
	if c.Stage == "" {
		c.Stage = "dev"
	}
	if c.Schedule == "" {
		c.Schedule = "0 * * * ? *"
	}
	if c.TimeZone == "" {
		c.TimeZone = "UTC"
	}
	if c.ConsumerTimeout == 0 {
		c.ConsumerTimeout = 30 * time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	return c
}

// StackName is the CloudFormation stack name for a stage.
func (c Config) StackName() string { return "IdempotentSqsPipeline-" + c.withDefaults().Stage }
