// Package record is `pipelinectl record get` and `record release`: reading the idempotency
// record of a key, and freeing a stuck INPROGRESS one with the consumer's own conditional
// release.
package record
