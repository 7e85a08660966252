// Command consumer is the Lambda function behind an SQS event source that constructs/consumer
// deploys by default. Everything it does is package consume; its Effect is the default one,
// consume.LogEffect: one "effect applied" log line per run, so the pipeline is observable end
// to end before any business logic exists. To run your own, write a main like this one with
// your Effect (see package consume) and point the construct's Entry at it.
package main

import "github.com/idempotent-sqs/pipeline/functions/consume"

func main() { consume.StartWith(logEffect) }

// logEffect builds the default effect once per cold start.
func logEffect(env consume.Env) (consume.Effect, error) { return consume.LogEffect(env.Logger), nil }
