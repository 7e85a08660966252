// Package codeshape holds the repository's code to its shape rules in its test: no function
// over 100 lines outside tests and benchmarks, so that each reads as its steps.
package codeshape
