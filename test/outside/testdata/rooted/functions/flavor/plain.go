//go:build !rooted

package flavor

const Name = "plain"
