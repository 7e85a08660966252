//go:build !unix

package local

import "context"

// lockFile does nothing where flock is not available: two installs at once each fetch into
// a directory of their own, and the first to finish is kept.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }

// sharedBuilds is false where flock is not available: each kit builds into its own directory.
const sharedBuilds = false

// holdLock marks nothing where flock is not available.
func holdLock(string, string) (func(), error) { return func() {}, nil }

// freeLock never takes a lock where flock is not available, so no kit's build directory is
// taken for a gone one's (a killed kit's stays in the temporary directory).
func freeLock(string) (func(), bool) { return nil, false }
