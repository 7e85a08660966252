// Package e2e runs the pipeline's real Lambda binaries against a real SQS-compatible server
// and DynamoDB Local, configured from a synthesized CloudFormation template, under the faults
// SQS, EventBridge Scheduler and Lambda produce in production: duplicate deliveries,
// duplicate schedule invocations, crashed and timed-out invocations, poison messages and a
// failing DynamoDB.
//
// It is a user of the public local kit (package local): the template reader, Deploy, the
// Poller that stands in for the event source mapping, the alarm evaluator and the ledger
// are there, with the Lambda Runtime API (internal/lambdart) and the emulator starters
// (internal/dynamolocal, internal/sqslocal). The scenarios, and the fault injection they
// need (internal/ddbproxy between the consumers and DynamoDB Local), are here, in the
// e2e-tagged test files: `make e2e` runs them.
package e2e
