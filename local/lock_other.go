//go:build !unix

package local

import "context"

// lockFile does nothing where flock is not available: two installs at once each fetch into
// a directory of their own, and the first to finish is kept.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
