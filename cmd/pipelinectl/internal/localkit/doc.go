// Package localkit is `pipelinectl local up` and `local install`: the command line of the
// local kit. The kit itself, which runs a synthesized app's pipelines on this machine as
// Lambda would, is the module's public package local; localkit only parses flags, starts
// it, sends and fires what it is told, and stops it cleanly on Ctrl-C.
package localkit
