//go:build unix

package local

import (
	"os"
	"path/filepath"
	"testing"
)

// The sweep removes a kit's build directory only when its lock file exists and nobody holds
// it: a live kit's (locked), a starting kit's (no lock file yet, or only the one being
// locked) and any other directory stay.
func TestSweepTakesOnlyGoneKits(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string) string {
		dir := filepath.Join(tmp, binDirPrefix+name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	live, gone, starting, locking := mk("live"), mk("gone"), mk("starting"), mk("locking")
	release, err := holdLock(live, binLockName)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	releaseGone, err := holdLock(gone, binLockName)
	if err != nil {
		t.Fatal(err)
	}
	releaseGone() // as when its process died
	if err := os.WriteFile(filepath.Join(locking, binLockName+".12345"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sweepStale()
	for dir, want := range map[string]bool{live: true, gone: false, starting: true, locking: true} {
		_, err := os.Stat(dir)
		if there := err == nil; there != want {
			t.Errorf("%s: there after the sweep %v, want %v", filepath.Base(dir), there, want)
		}
	}
	if _, ok := freeLock(filepath.Join(live, binLockName)); ok {
		t.Error("freeLock took a lock this kit holds")
	}
}
