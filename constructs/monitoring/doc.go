// Package monitoring is the pipeline's alarm layer: CloudWatch alarms on every part of the
// idempotent SQS pipeline, the encrypted SNS topics they notify (paging and ticketing), and a
// dashboard with one row per watched resource.
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
// Every alarm notifies one of two topics by severity. Topic() pages: work is lost or stuck
// (a message in a dead-letter queue or on-failure queue, a stalled consumer, a dropped or
// dead-lettered schedule invocation). TicketTopic() opens a ticket: the pipeline is
// degraded but retrying (message age, backlog, throttles, retried errors). The composite
// alarm Unhealthy() is in ALARM while any paging alarm is. An optional AWS Chatbot Slack
// channel receives both topics.
//
// Every alarm carries a description that tells the person on call what broke and what to
// check first, and ends with its severity and a link to its section of the runbooks
// (docs/runbooks.md in this repository, or RunbookURL). Every alarm treats missing data as
// "not breaching": every metric it watches is one AWS publishes only while something
// happens (a Lambda error, a throttle, a dropped schedule invocation) or while a queue is
// active, so silence means healthy, not broken. Alarm names are left to CloudFormation: they
// stay unique across stacks and environments, contain the construct path (which names the
// watch), and never block a replacement the way a fixed name does.
//
// A resource is watched once per app, however many times and by however many
// PipelineMonitoring constructs it is watched: see PipelineMonitoring.
package monitoring
