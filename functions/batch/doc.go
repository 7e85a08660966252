// Package batch processes the records of one SQS event for a Lambda SQS event source with
// ReportBatchItemFailures turned on, and reports per record which ones SQS must deliver again.
//
//	p, err := batch.New(batch.Options{Concurrency: 10, Logger: log})
//	...
//	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
//		report := p.Process(ctx, ev, handle)
//		return report.Response(), nil
//	})
//
// Process decides how records run from the event itself:
//
//   - Standard queue: every record runs concurrently, at most Options.Concurrency at a time.
//   - FIFO queue (an EventSourceARN ending in ".fifo"): the records of one MessageGroupId run
//     one after another in event order; the first failure in a group stops that group, and its
//     later records are reported StatusSkippedGroupFailed without running, so SQS redelivers
//     them after the failed one and the group's order holds. Groups run concurrently, at most
//     Options.Concurrency at a time.
//   - Deadline: a record is not started when the invocation deadline is closer than
//     Options.DeadlineMargin; it is reported StatusSkippedDeadline (and, on FIFO, the rest of
//     its group too). Handlers get a context that expires DeadlineMargin before the invocation
//     deadline; a handler that ignores it is abandoned at half the margin before the deadline
//     and its record reported StatusFailed with ErrStillRunning, so Process still returns a
//     response before Lambda kills the invocation (which would redeliver the whole batch).
//   - A panicking handler fails its record only (StatusPanicked, *PanicError).
//   - Workers: a Processor runs its records on goroutines it keeps between calls, so a
//     worker's stack, grown by a handler's deep calls, is not grown again for every batch
//     (until a garbage collection shrinks an idle one). At most Options.Concurrency workers
//     stay parked. A handler abandoned at the hard stop keeps its worker until it returns;
//     the next call starts another instead of waiting. Goroutine-level state a handler leaves
//     behind (pprof labels, a locked OS thread) carries over to the worker's next task.
//
// Every record that did not succeed is in Report.Response().BatchItemFailures, so nothing is
// dropped: the worst case is a redelivery, which the idempotency layer absorbs. Process itself
// never fails; an invocation-level failure (bad configuration) is the caller's to return.
//
// Inputs SQS does not normally produce are handled conservatively:
//
//   - The same MessageId twice in one event: the handler runs for the first occurrence only;
//     later occurrences are marked Duplicate and take the first one's Status and Err. The
//     response names the id once, and only if that run did not succeed. Running it twice would
//     race the two copies against each other (the idempotency lock would then fail one, and
//     with it the message) for no benefit.
//   - A FIFO record without a MessageGroupId: all such records of the event form one group of
//     their own, run in event order. Their true order relative to each other is unknown, so
//     the strictest order is kept; other groups are never blocked by them.
//   - Records of mixed queues: if any record comes from a FIFO queue the event is processed as
//     FIFO, since ordering where none was needed costs only speed.
//   - An empty MessageId cannot be named in the response; Lambda treats an empty
//     itemIdentifier as a failure of the whole batch, so such a record, if it fails, makes SQS
//     redeliver every record of the event (never a silent loss).
package batch
