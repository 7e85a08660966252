// Package localkit is `pipelinectl local up` and `local install`: the command line of the
// local kit. The kit itself, which runs a synthesized app's pipelines on this machine as
// Lambda would, is the module's public package local. localkit installs the kit's backends
// (install), and for up reads the flags, starts the kit, sends and fires what it is told,
// prints a status line per pipeline while it runs, and stops it cleanly on Ctrl-C.
package localkit
