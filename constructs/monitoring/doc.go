// Package monitoring is the pipeline's alarm layer: CloudWatch alarms on every part of the
// idempotent SQS pipeline, an encrypted SNS topic they notify, and a dashboard with one row
// per watched resource.
//
// It depends only on CDK interfaces (awssqs.IQueue, awslambda.IFunction, awsdynamodb.ITable,
// awsscheduler.ISchedule), so it watches resources built by this repository's constructs,
// by other constructs, or imported with FromXxxArn:
//
//	mon := monitoring.NewPipelineMonitoring(stack, "Monitoring", &monitoring.PipelineMonitoringProps{
//		AlarmEmails: []string{"oncall@example.com"},
//	})
//	mon.WatchQueue("Orders", ordersQueue.Queue(), ordersQueue.DeadLetterQueue())
//	mon.WatchConsumer("Orders", consumerFn, ordersQueue.Queue())
//	mon.WatchDispatcher("Nightly", dispatcherFn, schedule, scheduleDLQ, dispatcherFailures)
//	mon.WatchTable("Idempotency", table.Table())
//
// Each Watch call returns its alarms (QueueAlarms, ConsumerAlarms, ...) for composite
// alarms or extra actions; Alarms() lists all of them.
//
// Every alarm notifies Topic(), carries a description that tells the person on call what
// broke and what to check first, and treats missing data as "not breaching": every metric it
// watches is one AWS publishes only while something happens (a Lambda error, a throttle, a
// dropped schedule invocation) or while a queue is active, so silence means healthy, not
// broken. Alarm names are left to CloudFormation: they stay unique across stacks and
// environments, contain the construct path (which names the watch), and never block a
// replacement the way a fixed name does.
package monitoring
