package consume

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// DeadLetter moves a record that can never succeed to the dead-letter queue at once, so it
// stops costing receives and, on a FIFO queue, stops holding up its group.
//
// Why not leave it to the queue's redrive policy: SQS counts a receive for every message an
// event source mapping receives, and on a FIFO queue the mapping receives the records behind
// a failing one in its group in the same batch. They are reported as failures unprocessed,
// come back together, and after maxReceiveCount receives SQS moves them to the DLQ with the
// poison one: good messages dead-lettered because of a bad one ahead of them (the e2e suite
// shows this on ElasticMQ). Retrying bad input cannot help anyway.
type DeadLetter interface {
	// Send puts a copy of rec on the dead-letter queue with the reason. An error leaves the
	// record to the redrive policy (the consumer reports it as failed, as without a DLQ).
	Send(ctx context.Context, rec events.SQSMessage, code, reason string) error
}

// SQSSendAPI is the one SQS call SQSDeadLetter makes.
type SQSSendAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQSDeadLetter sends dead-lettered records to one SQS queue. A FIFO queue (URL ending in
// .fifo) gets the record's MessageGroupId, and its MessageId as the deduplication id (as SQS's
// own redrive does), so a record dead-lettered twice within SQS's 5-minute deduplication window
// lands once. A standard DLQ can hold a second copy (the source delete failed after the send,
// or SQS delivered the record twice): readers deduplicate on the SourceMessageId attribute.
type SQSDeadLetter struct {
	API SQSSendAPI
	URL string
}

// Attributes added to a dead-lettered message, when the original leaves room (SQS allows 10).
const (
	// Deprecated: use contract.AttrDeadLetterReason, where the functions and their readers
	// agree on it.
	AttrDeadLetterReason = contract.AttrDeadLetterReason
	// Deprecated: use contract.AttrSourceMessageID.
	AttrSourceMessageID = contract.AttrSourceMessageID
	// Deprecated: use contract.MaxReasonBytes.
	MaxReasonBytes       = contract.MaxReasonBytes
	maxMessageAttributes = 10
)

// Send implements DeadLetter.
func (d SQSDeadLetter) Send(ctx context.Context, rec events.SQSMessage, code, reason string) error {
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(d.URL),
		MessageBody:       aws.String(rec.Body),
		MessageAttributes: make(map[string]sqstypes.MessageAttributeValue, len(rec.MessageAttributes)+2),
	}
	for name, a := range rec.MessageAttributes {
		if name == contract.AttrDeadLetterReason || name == contract.AttrSourceMessageID {
			continue // ours, from an earlier dead-lettering: this one's replace them
		}
		in.MessageAttributes[name] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	if len(reason) > contract.MaxReasonBytes {
		reason = strings.ToValidUTF8(reason[:contract.MaxReasonBytes], "") // no half character at the cut
	}
	why := code + ": " + reason
	switch maxMessageAttributes - len(in.MessageAttributes) {
	case 0: // the original's attributes fill the message: the log line carries the reason
	case 1: // room for one: the reason, with the source id in it
		in.MessageAttributes[contract.AttrDeadLetterReason] = stringAttr(why + " (source message " + rec.MessageId + ")")
	default:
		in.MessageAttributes[contract.AttrDeadLetterReason] = stringAttr(why)
		in.MessageAttributes[contract.AttrSourceMessageID] = stringAttr(rec.MessageId)
	}
	group := rec.Attributes["MessageGroupId"]
	switch {
	case strings.HasSuffix(d.URL, ".fifo"):
		if group == "" {
			group = "dead-letter" // a standard source feeding a FIFO DLQ; SQS requires a group
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(rec.MessageId)
	case group != "":
		// A fair queue's tenant: the copy keeps it, so that a redrive brings it back whole
		// (a consumer whose tenant is the group refuses a message without one).
		in.MessageGroupId = aws.String(group)
	}
	if _, err := d.API.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("dead-letter message %s: %w", rec.MessageId, err)
	}
	return nil
}

func stringAttr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}
