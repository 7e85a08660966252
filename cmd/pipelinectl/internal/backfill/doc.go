// Package backfill is `pipelinectl backfill`: it runs the occurrences of a pipeline's
// schedule that EventBridge Scheduler missed, each as the event Scheduler would have sent,
// so that the dispatcher's keys make a second run of an occurrence a duplicate.
package backfill
