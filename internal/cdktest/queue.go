package cdktest

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// PlainQueue is a queue as a user's own code creates it, outside this repository's
// constructs: SQS-managed encryption, SSL only, a dead-letter queue (14 days) after 5
// receives, whose own lack of a redrive policy is suppressed for cdk-nag. A visibility or
// retention of 0 keeps SQS's default.
func PlainQueue(scope constructs.Construct, id string, fifo bool, visibility, retention time.Duration) (queue, dlq awssqs.Queue) {
	dlq = awssqs.NewQueue(scope, jsii.String(id+"DLQ"), &awssqs.QueueProps{
		Fifo:            jsii.Bool(fifo),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(dlq, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("Serverless-SQSRedrivePolicy"), Reason: jsii.String("test fake: this queue is the dead-letter queue"),
	}}, nil)
	props := &awssqs.QueueProps{
		Fifo:            jsii.Bool(fifo),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
	}
	if visibility > 0 {
		props.VisibilityTimeout = awscdk.Duration_Seconds(jsii.Number(visibility.Seconds()))
	}
	if retention > 0 {
		props.RetentionPeriod = awscdk.Duration_Seconds(jsii.Number(retention.Seconds()))
	}
	return awssqs.NewQueue(scope, jsii.String(id), props), dlq
}
