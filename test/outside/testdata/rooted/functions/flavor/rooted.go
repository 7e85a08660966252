//go:build rooted

// Package flavor says which build of the function runs: the Makefile's, with the rooted
// tag, or any other.
package flavor

const Name = "tagged"
