package queue

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// ExistingProcessingQueueProps describes an SQS queue created outside this stack, and its
// dead-letter queue, for a consumer (or a dispatcher) to use. Name each queue by ARN or by
// name (one of the two; a name means the stack's account and region).
//
// CDK cannot read an imported queue's settings, so the settings the constructs depend on are
// props, and keeping them true is the caller's part: VisibilityTimeout and RetentionPeriod
// must be the queue's own, DeadLetterQueue must be the target of the queue's redrive policy,
// and the queue must be in the stack's region (a Lambda event source reads a queue in its
// own region). A queue in another account also needs a queue policy (and a key policy, with
// SSE-KMS) that admits the consumer's role: grants only write the role's identity policy.
type ExistingProcessingQueueProps struct {
	// QueueArn is the source queue's ARN, arn:<partition>:sqs:<region>:<account>:<name>. It
	// may be a token; a resolved ARN is validated.
	QueueArn string
	// QueueName is the source queue's name, in the stack's account and region. It may be a
	// token; a resolved name is validated.
	QueueName string

	// DeadLetterQueueArn is the ARN of the queue the source queue's redrive policy moves
	// messages to. Required, as DeadLetterQueueName: the consumer moves records that can
	// never succeed there at once (DEAD_LETTER_QUEUE_URL), and a queue without a DLQ would
	// retry a poison message until it expires.
	DeadLetterQueueArn string
	// DeadLetterQueueName is the DLQ's name, in the stack's account and region.
	DeadLetterQueueName string

	// Fifo says whether the queues are FIFO queues. It is read from the names when they
	// are resolved (a FIFO queue's name ends in ".fifo"); when both names are tokens it is
	// required, since the consumer's event source and the dispatcher's messages differ by
	// queue type. When set, it must agree with the resolved names.
	// Default: nil (derived from the names).
	Fifo *bool

	// VisibilityTimeout is the source queue's visibility timeout (1 s to 12 h, whole
	// seconds). Required: the consumer construct refuses a function timeout whose
	// VisibilityFactor multiple exceeds it (a batch would be redelivered while an attempt
	// may still run), and it cannot read the value from an imported queue.
	VisibilityTimeout time.Duration

	// RetentionPeriod is the source queue's message retention period (1 min to 14 days).
	// Required: the consumer keeps completed idempotency records at least this long by
	// default (a redelivered duplicate must still find its record), and it cannot read the
	// value from an imported queue.
	RetentionPeriod time.Duration

	// DeadLetterRetentionPeriod is the DLQ's message retention period (1 min to 14 days).
	// The consumer keeps completed idempotency records for the source's and the DLQ's
	// retention together (and a redrive window), so a message redriven from the DLQ still
	// finds its record. Default: 0, taken as 14 days, SQS's maximum: never shorter than the
	// DLQ's own, so the records it implies are long enough whatever the DLQ keeps.
	DeadLetterRetentionPeriod time.Duration

	// MaxMessageSize is the source queue's maximum message size in bytes (1,024 to
	// 1,048,576), which the consumer takes as its MAX_BODY_BYTES: give it when the queue
	// accepts more than 262,144 bytes, or larger messages are dead-lettered as oversize (SQS
	// now creates queues with 1 MiB by default: check the queue's MaximumMessageSize).
	// Default: 0, taken as 262,144.
	MaxMessageSize int

	// MaxReceiveCount is the source queue's redrive maxReceiveCount (1 to 1000), reported by
	// the result's MaxReceiveCount for alarms and documentation.
	// Default: 0 (not given; MaxReceiveCount reports 0).
	MaxReceiveCount int

	// EncryptionKey is the source queue's KMS key when it uses SSE-KMS. The consumer's
	// grants then include decrypting with it, and the dispatcher's encrypting with it.
	// Default: nil (SSE-SQS, or no encryption: no key permissions needed).
	EncryptionKey awskms.IKey

	// DeadLetterEncryptionKey is the DLQ's KMS key when it uses SSE-KMS: the consumer sends
	// records that can never succeed to the DLQ itself and needs to encrypt with it.
	// Default: EncryptionKey.
	DeadLetterEncryptionKey awskms.IKey
}

// queueArnPattern is a resolved SQS queue ARN: partition, region, account, name.
var queueArnPattern = regexp.MustCompile(`^arn:(aws[a-z-]*):sqs:([a-z0-9-]+):(\d{12}):(.+)$`)

type existingQueue struct {
	constructs.Construct
	queue, dlq awssqs.IQueue
	p          ExistingProcessingQueueProps
	fifo       bool
}

var _ ProcessingQueue = (*existingQueue)(nil)

// ImportProcessingQueue returns a ProcessingQueue for an existing queue and its DLQ: a
// construct scope/id whose Queue (construct id "Resource") and DeadLetterQueue (construct id
// "DeadLetterQueue") are the imported queues. It creates no resource. The result goes
// wherever a queue from NewProcessingQueue does: the consumer's Queue prop (with
// dead-lettering to the DLQ) and the dispatcher's Queue prop.
//
//	q := queue.ImportProcessingQueue(stack, "Orders", &queue.ExistingProcessingQueueProps{
//		QueueName:           "orders.fifo",
//		DeadLetterQueueName: "orders-dlq.fifo",
//		VisibilityTimeout:   6 * time.Minute, // the queue's own settings
//		RetentionPeriod:     4 * 24 * time.Hour,
//	})
//
// See ExistingProcessingQueueProps for what cannot be checked. Invalid props panic with a
// *validate.Error, before anything is created.
func ImportProcessingQueue(scope constructs.Construct, id string, props *ExistingProcessingQueueProps) ProcessingQueue {
	var p ExistingProcessingQueueProps
	if props != nil {
		p = *props
	}
	if p.DeadLetterEncryptionKey == nil {
		p.DeadLetterEncryptionKey = p.EncryptionKey
	}
	v := validate.NewIn("ExistingProcessingQueue", scope, id)
	region := *awscdk.Stack_Of(scope).Region()
	src := checkExisting(v, "Queue", p.QueueArn, p.QueueName, region)
	dlq := checkExisting(v, "DeadLetterQueue", p.DeadLetterQueueArn, p.DeadLetterQueueName, region)
	fifo := p.checkType(v, src, dlq)
	requiredDuration(v, "VisibilityTimeout", p.VisibilityTimeout, time.Second, maxVisibilityTimeout)
	requiredDuration(v, "RetentionPeriod", p.RetentionPeriod, minRetention, maxRetention)
	if p.DeadLetterRetentionPeriod != 0 {
		durationIn(v, "DeadLetterRetentionPeriod", p.DeadLetterRetentionPeriod, minRetention, maxRetention)
	}
	if p.MaxMessageSize != 0 {
		checkMessageSize(v, p.MaxMessageSize, "0 means 262144")
	}
	if p.MaxReceiveCount < 0 || p.MaxReceiveCount > maxMaxReceiveCount {
		v.Add("MaxReceiveCount", p.MaxReceiveCount, fmt.Sprintf("must be 1 to %d, the queue's redrive maxReceiveCount (0: not given)", maxMaxReceiveCount))
	}
	v.Check()

	q := &existingQueue{p: p, fifo: fifo}
	constructs.NewConstruct_Override(q, scope, jsii.String(id))
	q.queue = importQueue(q, "Resource", p.QueueArn, p.QueueName, fifo, p.EncryptionKey)
	q.dlq = importQueue(q, "DeadLetterQueue", p.DeadLetterQueueArn, p.DeadLetterQueueName, fifo, p.DeadLetterEncryptionKey)
	return q
}

// existingName is what the props say about one imported queue: its name when resolved.
type existingName struct {
	name     string // "" unless resolved
	resolved bool
	token    bool // given as an unresolved token
}

// checkExisting validates one queue's ARN or name (prefix "Queue" or "DeadLetterQueue") and
// returns its name when it is resolved.
func checkExisting(v *validate.Problems, prefix, arn, name, region string) existingName {
	arnProp, nameProp := prefix+"Arn", prefix+"Name"
	switch {
	case arn == "" && name == "":
		v.Addf(arnProp, "neither %s nor %s is set; give the existing queue's ARN, or its name for a queue in the stack's account and region", arnProp, nameProp)
	case arn != "" && name != "":
		v.Addf(arnProp, "both %s and %s are set; give one of them", arnProp, nameProp)
	case name != "":
		if validate.Unresolved(name) {
			return existingName{token: true}
		}
		checkExistingName(v, nameProp, name)
		return existingName{name: name, resolved: true}
	case validate.Unresolved(arn):
		return existingName{token: true}
	default:
		m := queueArnPattern.FindStringSubmatch(arn)
		if m == nil {
			v.Add(arnProp, fmt.Sprintf("%q", arn), "want arn:<partition>:sqs:<region>:<account>:<queue name>")
			return existingName{}
		}
		if !validate.Unresolved(region) && m[2] != region {
			v.Add(arnProp, fmt.Sprintf("%q", arn), fmt.Sprintf(
				"the queue is in %s and the stack in %s; a Lambda event source reads a queue in its own region, so deploy the stack to %s or use a queue in %s",
				m[2], region, m[2], region))
		}
		checkExistingName(v, arnProp, m[4])
		return existingName{name: m[4], resolved: true}
	}
	return existingName{}
}

// checkExistingName applies SQS's naming rules to an existing queue's name, whatever its type.
func checkExistingName(v *validate.Problems, prop, name string) {
	base := strings.TrimSuffix(name, fifoSuffix)
	switch {
	case len(name) > maxQueueNameLength:
		v.Add(prop, fmt.Sprintf("%q (%d characters)", name, len(name)), fmt.Sprintf("SQS queue names are at most %d characters, .fifo included", maxQueueNameLength))
	case base == "" || !queueNameChars.MatchString(base):
		v.Add(prop, fmt.Sprintf("%q", name), "not an SQS queue name: letters, digits, '-' and '_' (plus .fifo on a FIFO queue)")
	}
}

// checkType derives whether the queues are FIFO from their resolved names and p.Fifo, and
// records any disagreement.
func (p ExistingProcessingQueueProps) checkType(v *validate.Problems, src, dlq existingName) bool {
	fifoName := func(n existingName) bool { return strings.HasSuffix(n.name, fifoSuffix) }
	kind := func(fifo bool) string {
		if fifo {
			return "a FIFO queue"
		}
		return "a standard queue"
	}
	if src.resolved && dlq.resolved && fifoName(src) != fifoName(dlq) {
		v.Addf("DeadLetterQueueArn", "the source queue %q is %s and its DLQ %q %s; SQS requires a DLQ of the source queue's type",
			src.name, kind(fifoName(src)), dlq.name, kind(fifoName(dlq)))
	}
	for _, n := range []existingName{src, dlq} {
		if !n.resolved {
			continue
		}
		if p.Fifo != nil && *p.Fifo != fifoName(n) {
			v.Add("Fifo", *p.Fifo, fmt.Sprintf("the queue %q is %s (a FIFO queue's name ends in .fifo); leave Fifo nil to derive it from the name", n.name, kind(fifoName(n))))
		}
		return fifoName(n)
	}
	if p.Fifo == nil && src.token && dlq.token {
		v.Addf("Fifo", "not set, and both queue names are tokens, so the queue type cannot be read from them; set Fifo to jsii.Bool(true) for FIFO queues or jsii.Bool(false)")
		return false
	}
	return p.Fifo != nil && *p.Fifo
}

// requiredDuration checks a setting of an existing queue that the constructs cannot read
// from it: given, within SQS's range, whole seconds.
func requiredDuration(v *validate.Problems, prop string, d, lo, hi time.Duration) {
	switch {
	case d == 0:
		v.Addf(prop, "not set; give the existing queue's own %s (CDK cannot read it from an imported queue, and the consumer construct checks its settings against it)", prop)
	case d < lo || d > hi:
		v.Add(prop, d, fmt.Sprintf("SQS takes %v to %v; give the existing queue's own value", lo, hi))
	case d%time.Second != 0:
		v.Add(prop, d, "SQS takes whole seconds; give the existing queue's own value")
	}
}

// importQueue imports one queue by ARN, or by name in the stack's account and region.
func importQueue(scope constructs.Construct, id, arn, name string, fifo bool, key awskms.IKey) awssqs.IQueue {
	if arn == "" {
		arn = *awscdk.Stack_Of(scope).FormatArn(&awscdk.ArnComponents{
			Service:   jsii.String("sqs"),
			Resource:  jsii.String(name),
			ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
		})
	}
	attrs := &awssqs.QueueAttributes{QueueArn: jsii.String(arn), Fifo: jsii.Bool(fifo)}
	if key != nil {
		attrs.KeyArn = key.KeyArn()
	}
	return awssqs.Queue_FromQueueAttributes(scope, jsii.String(id), attrs)
}

func (q *existingQueue) Queue() awssqs.IQueue             { return q.queue }
func (q *existingQueue) DeadLetterQueue() awssqs.IQueue   { return q.dlq }
func (q *existingQueue) Fifo() bool                       { return q.fifo }
func (q *existingQueue) VisibilityTimeout() time.Duration { return q.p.VisibilityTimeout }
func (q *existingQueue) RetentionPeriod() time.Duration   { return q.p.RetentionPeriod }
func (q *existingQueue) DeadLetterRetentionPeriod() time.Duration {
	return orDefault(q.p.DeadLetterRetentionPeriod, maxRetention)
}
func (q *existingQueue) MaxReceiveCount() int { return q.p.MaxReceiveCount }
func (q *existingQueue) MaxMessageSize() int {
	if q.p.MaxMessageSize == 0 {
		return DefaultMaxMessageSize
	}
	return q.p.MaxMessageSize
}
