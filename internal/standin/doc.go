// Package standin holds the local kit's pieces: the stand-ins for the AWS services a
// pipeline needs, each read from a synthesized template. LoadTemplate and LoadAssembly read
// the templates (Template); Deploy creates their queues and tables on an SQS server and
// DynamoDB Local (Deployment); InvokeAsync is Lambda's asynchronous invocation; Observer
// records what runs as CloudWatch metrics (Series), and Evaluate (Observer.Evaluate for
// every alarm of a stack) applies the templates' alarms with CloudWatch's rules. Three
// services are packages of their own, each with a narrow API: poller (an SQS event source
// mapping, invoking functions through an Invoker), schedule (when a schedule fires, and the
// event it hands its target) and ledger (the consumers' effects and outcomes, from their log
// lines).
//
// Package local assembles them into the kit a user starts (local.Start); this repository's
// scenarios (test/e2e) drive them by hand, with faults injected between them.
package standin
