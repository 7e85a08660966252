//go:build unix

package local

import (
	"context"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive lock on path (created if need be), waiting for another process
// that holds it, until ctx ends; unlock releases it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// holdLock takes an exclusive lock on path (created) without waiting, held until release or
// until the process ends, however it ends: the kernel drops a flock with its last descriptor.
func holdLock(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// heldByAnother reports whether a process holds path's lock (holdLock); false when nobody
// does, or the file is gone.
func heldByAnother(path string) bool {
	release, err := holdLock(path)
	if err != nil {
		return !os.IsNotExist(err)
	}
	release()
	return false
}
