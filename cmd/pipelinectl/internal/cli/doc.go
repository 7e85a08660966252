// Package cli is what every pipelinectl command shares: the flags that say where a
// pipeline's resources are (--stack, --outputs, --pipeline and the overrides), the AWS
// clients built from them, reading a stack's outputs and a queue's attributes, the errors
// that choose an exit code (UsageError, NotDone, Left) and the one table of exit codes, and
// errors and output put in an operator's words.
//
// The commands themselves are in the packages beside it, one per task: dlq, record,
// health, backfill, policy and localkit.
package cli
