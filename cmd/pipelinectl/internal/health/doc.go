// Package health is `pipelinectl status` and `pipelinectl verify`: status reads what each
// pipeline is doing now (queue depths, the consumer's event source mapping, the alarms);
// verify checks that a deployed stack works end to end by sending a probe through it and
// reading the composite alarm's children.
package health
