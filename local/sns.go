package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// snsAPI answers SNS's Publish (the query protocol, as the SDKs and the AWS CLI send it) to
// a topic of the running stacks: the message goes to each of the topic's SQS subscriptions
// as SNS delivers it, raw (RawMessageDelivery) or in SNS's JSON envelope. Other SNS calls
// get an error naming them.
func (k *Kit) snsAPI(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		cloudWatchError(w, false, http.StatusBadRequest, "InvalidParameter", err.Error())
		return
	}
	if a := r.Form.Get("Action"); a != "Publish" {
		cloudWatchError(w, false, http.StatusNotImplemented, "NotImplemented", fmt.Sprintf(
			"the local kit answers SNS Publish only, not %s: the topics are the templates', created when the kit starts", a))
		return
	}
	p := publication{Message: r.Form.Get("Message"), Subject: r.Form.Get("Subject"),
		GroupID: r.Form.Get("MessageGroupId"), DedupID: r.Form.Get("MessageDeduplicationId"), Attrs: publishedAttributes(r)}
	if err := k.publish(r.Context(), cmp.Or(r.Form.Get("TopicArn"), r.Form.Get("TargetArn")), &p); err != nil {
		var e *snsError
		if !errors.As(err, &e) {
			e = &snsError{http.StatusInternalServerError, "InternalError", err.Error()}
		}
		cloudWatchError(w, false, e.status, e.code, e.msg)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>%s</MessageId></PublishResult>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></PublishResponse>`, p.ID, newMessageID())
}

// snsError is an error SNS answers with.
type snsError struct {
	status    int
	code, msg string
}

func (e *snsError) Error() string { return e.code + ": " + e.msg }

// publish delivers p to each SQS subscription of the topic arn, in every running stack, and
// gives it its message id.
func (k *Kit) publish(ctx context.Context, arn string, p *publication) error {
	st, topic := k.topic(arn)
	if st == nil {
		return &snsError{http.StatusNotFound, "NotFound", fmt.Sprintf("Topic does not exist: %s is not a topic of the running stacks", arn)}
	}
	if st.d.Template.Topics[topic].Fifo() && p.GroupID == "" {
		return &snsError{http.StatusBadRequest, "InvalidParameter", "Invalid parameter: The MessageGroupId parameter is required for FIFO topics"}
	}
	p.ID, p.TopicArn = newMessageID(), arn
	for _, sub := range k.subscriptions(st, topic) {
		if sub.Filter != nil && !sub.Filter.MatchDocument(filtered(sub.FilterOnBody, p)) {
			continue // SNS does not deliver what the subscription's filter policy does not match
		}
		url, ok := k.queueByARN(sub.arn)
		if !ok {
			return fmt.Errorf("subscription %s of %s: its queue %s is not a queue of the running stacks", sub.LogicalID, arn, sub.arn)
		}
		if err := k.deliver(ctx, url, sub.Raw, *p); err != nil {
			return fmt.Errorf("delivering to %s: %w", url, err)
		}
	}
	return nil
}

// filtered is what a subscription's filter policy is matched against: the message itself
// (FilterPolicyScope MessageBody; a message that is not a JSON object matches nothing), or
// its attributes as a JSON object, as SNS reads them: a String as a string, a Number as a
// number, a String.Array as its array; Binary attributes are not matched.
func filtered(onBody bool, p *publication) []byte {
	if onBody {
		return []byte(p.Message)
	}
	doc := map[string]json.RawMessage{}
	for name, a := range p.Attrs {
		v := aws.ToString(a.StringValue)
		switch typ := aws.ToString(a.DataType); {
		case strings.HasPrefix(typ, "Number") && json.Valid([]byte(v)):
			doc[name] = json.RawMessage(v)
		case strings.HasPrefix(typ, "String.Array") && strings.HasPrefix(strings.TrimSpace(v), "[") && json.Valid([]byte(v)):
			doc[name] = json.RawMessage(v)
		case strings.HasPrefix(typ, "String"):
			doc[name], _ = json.Marshal(v)
		}
	}
	b, _ := json.Marshal(doc)
	return b
}

// publication is one published message.
type publication struct {
	ID, TopicArn, Message, Subject string
	GroupID, DedupID               string
	Attrs                          map[string]sqstypes.MessageAttributeValue
}

// publishedAttributes reads Publish's MessageAttributes.entry.N.{Name,Value.DataType,
// Value.StringValue,Value.BinaryValue}.
func publishedAttributes(r *http.Request) map[string]sqstypes.MessageAttributeValue {
	out := map[string]sqstypes.MessageAttributeValue{}
	for n := 1; ; n++ {
		prefix := "MessageAttributes.entry." + strconv.Itoa(n) + "."
		name := r.Form.Get(prefix + "Name")
		if name == "" {
			return out
		}
		v := sqstypes.MessageAttributeValue{DataType: aws.String(r.Form.Get(prefix + "Value.DataType"))}
		if s := r.Form.Get(prefix + "Value.StringValue"); s != "" {
			v.StringValue = aws.String(s)
		}
		if b := r.Form.Get(prefix + "Value.BinaryValue"); b != "" {
			v.BinaryValue = []byte(b)
		}
		out[name] = v
	}
}

// topic finds a running stack's topic by its local ARN.
func (k *Kit) topic(arn string) (*stackRun, string) {
	for _, st := range k.stacks {
		for id, a := range st.d.TopicARN {
			if a == arn {
				return st, id
			}
		}
	}
	return nil, ""
}

type subscription struct {
	standin.Subscription
	arn string // the queue's local ARN
}

// subscriptions are a topic's SQS subscriptions in every running stack (a subscription may
// be in another stack than its topic, which it names by an import or a parameter).
func (k *Kit) subscriptions(st *stackRun, topic string) []subscription {
	arn := st.d.TopicARN[topic]
	var out []subscription
	for _, other := range k.stacks {
		for _, s := range other.d.Template.Subscriptions {
			if t, err := other.d.Resolve(s.TopicArn); err != nil || t != arn {
				continue
			}
			if q, err := other.d.Resolve(s.Endpoint); err == nil {
				q, _ := q.(string)
				out = append(out, subscription{Subscription: s, arn: q})
			}
		}
	}
	return out
}

// queueByARN is the URL of a running stack's queue by its local ARN.
func (k *Kit) queueByARN(arn string) (string, bool) {
	for _, st := range k.stacks {
		for id, a := range st.d.QueueARN {
			if a == arn {
				return st.d.QueueURL[id], true
			}
		}
	}
	return "", false
}

// deliver sends p to a subscribed queue as SNS does: the message itself with its
// attributes (raw), or SNS's JSON envelope with the attributes in it.
func (k *Kit) deliver(ctx context.Context, url string, raw bool, p publication) error {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(p.Message)}
	if raw {
		in.MessageAttributes = p.Attrs
	} else {
		in.MessageBody = aws.String(envelope(p))
	}
	if p.GroupID != "" {
		in.MessageGroupId = aws.String(p.GroupID)
		dedup := p.DedupID
		if dedup == "" { // a topic with content-based deduplication: SHA-256 of the message
			sum := sha256.Sum256([]byte(p.Message))
			dedup = hex.EncodeToString(sum[:])
		}
		in.MessageDeduplicationId = aws.String(dedup)
	}
	_, err := k.sq.SendMessage(ctx, in)
	return err
}

// envelope is SNS's JSON notification of p, as an SQS subscription without raw delivery
// receives it. The signature fields are placeholders: nothing here signs.
func envelope(p publication) string {
	type attr struct{ Type, Value string }
	e := struct {
		Type              string
		MessageId         string
		SequenceNumber    string `json:",omitempty"`
		TopicArn          string
		Subject           string `json:",omitempty"`
		Message           string
		Timestamp         string
		SignatureVersion  string
		Signature         string
		SigningCertURL    string
		UnsubscribeURL    string
		MessageAttributes map[string]attr `json:",omitempty"`
	}{Type: "Notification", MessageId: p.ID, TopicArn: p.TopicArn, Subject: p.Subject, Message: p.Message,
		Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), SignatureVersion: "1", Signature: "local-kit-unsigned",
		SigningCertURL: "http://localhost/local-kit-unsigned.pem", UnsubscribeURL: "http://localhost/?Action=Unsubscribe&SubscriptionArn=" + p.TopicArn + ":local"}
	for name, v := range p.Attrs {
		if e.MessageAttributes == nil {
			e.MessageAttributes = map[string]attr{}
		}
		value := aws.ToString(v.StringValue)
		if v.BinaryValue != nil {
			value = string(v.BinaryValue)
		}
		e.MessageAttributes[name] = attr{Type: strings.SplitN(aws.ToString(v.DataType), ".", 2)[0], Value: value}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // SNS writes the UnsubscribeURL's & as it is
	enc.Encode(e)
	return strings.TrimSuffix(b.String(), "\n")
}

// newMessageID is a random id in SNS's shape (a UUID).
func newMessageID() string {
	b := make([]byte, 16)
	rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
