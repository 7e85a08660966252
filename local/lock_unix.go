//go:build unix

package local

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// sharedBuilds says kits may share kept builds (buildKept), each built under lockFile.
const sharedBuilds = true

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

// holdLock marks dir as this process's while it runs: it locks a new file in dir, then
// renames it to name, so that name exists only once it is locked. The kernel drops a flock
// with its last descriptor, so the lock ends with the process however it ends.
func holdLock(dir, name string) (release func(), err error) {
	f, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// freeLock takes path's lock (holdLock's) when nobody holds it, and says whether it did;
// false too when there is no such file. It never creates one.
func freeLock(path string) (release func(), ok bool) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, true
}
