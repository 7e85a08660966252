//go:build !unix

package local

import "context"

// lockFile does nothing where flock is not available: two installs at once each fetch into
// a directory of their own, and the first to finish is kept.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }

// holdLock holds nothing where flock is not available.
func holdLock(string) (func(), error) { return func() {}, nil }

// heldByAnother cannot tell where flock is not available, so it says yes: a kit's build
// directory is then never taken for a dead one's.
func heldByAnother(string) bool { return true }
