// Package policy is `pipelinectl policy`: the least-privilege IAM policy an operator needs
// to run the other commands on one pipeline, read-only or to operate.
package policy
