// Command app deploys the orders pipeline into an account that already has an idempotency
// table (here one created by Powertools for AWS Lambda: partition key id, TTL on expiration)
// and an SNS topic the on-call rota subscribes to. The pipeline's consumer is this module's
// own function (functions/orders), which writes each order to an orders table the stack
// creates, with exactly the grant it needs.
//
//	cd examples/orders && cdk synth -c idempotencyTable=NAME -c alarmTopicArn=ARN
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

func main() {
	defer validate.ExitOnInvalidProps()
	app := awscdk.NewApp(nil)
	NewOrdersStack(app, "Orders", &OrdersStackProps{
		IdempotencyTableName: contextOr(app, "idempotencyTable", "powertools-idempotency"),
		AlarmTopicArn:        contextOr(app, "alarmTopicArn", "arn:aws:sns:eu-west-1:111122223333:on-call"),
	})
	app.Synth(nil)
}

// contextOr returns the app's context value for key, or def.
func contextOr(app awscdk.App, key, def string) string {
	if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
		return v
	}
	return def
}
