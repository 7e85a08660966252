// Package standin holds the local kit's pieces: the stand-ins for the AWS services a
// pipeline needs, each read from a synthesized template. LoadTemplate and LoadAssembly read
// the templates (Template); Deploy creates their queues and tables on an SQS server and
// DynamoDB Local (Deployment); InvokeAsync is Lambda's asynchronous invocation; Observer
// records what a deployment's run produces as CloudWatch metrics and evaluates the
// template's alarms over them. Every CloudFormation value is resolved by one evaluator,
// cfn.Resolver (values.go). Four services are packages of their own, each with a narrow
// API: poller (an SQS event source mapping, invoking functions through an Invoker),
// schedule (when a schedule fires, and the event it hands its target), ledger (the
// consumers' effects and outcomes, from their log lines) and alarm (CloudWatch's alarms and
// composite alarms, evaluated with its rules over a run's metrics).
//
// Package local assembles them into the kit a user starts (local.Start); this repository's
// scenarios (test/e2e) drive them by hand, with faults injected between them.
package standin
