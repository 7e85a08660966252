// Command dispatcher is the Lambda function EventBridge Scheduler invokes that
// constructs/dispatcher deploys by default. Everything it does is package dispatch; its work
// items are the default ones, dispatch.EventItems: the items listed in the schedule's input.
// To read them from elsewhere, write a main like this one with your ItemSource (see package
// dispatch) and point the construct's Entry at it.
package main

import "github.com/idempotent-sqs/pipeline/functions/dispatch"

func main() { dispatch.Start(source) }

// source is the default ItemSource.
var source dispatch.ItemSource = dispatch.EventItems{}
