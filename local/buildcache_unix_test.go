//go:build unix

package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// A function's build is kept in the user's cache and copied to where the kit runs it: two
// kits get the same executable, each its own copy; a module in the temporary directory is
// not kept; a kept build unused past the cutoff is swept unless a kit holds its lock.
func TestBuildsAreKeptAndSwept(t *testing.T) {
	// Go's build cache is under XDG_CACHE_HOME too: it stays where it is.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", string(bytes.TrimSpace(gocache)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	// The temporary directory moves to one of the test's own, so the checkout counts as a
	// module outside it even where the checkout itself is in /tmp (CI's fresh clone).
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	outs := []string{filepath.Join(t.TempDir(), "a", "bootstrap"), filepath.Join(t.TempDir(), "b", "bootstrap")}
	for _, out := range outs {
		if err := buildKept(ctx, lambdart.Deployed(root, "./internal/lambdart/testdata/fn"), out); err != nil {
			t.Fatal(err)
		}
	}
	cache, _ := CacheDir()
	kept, _ := filepath.Glob(filepath.Join(cache, "builds", "*", "bootstrap"))
	if len(kept) != 1 {
		t.Fatalf("kept builds %v, want one for the one source", kept)
	}
	want, _ := os.ReadFile(kept[0])
	for _, out := range outs {
		got, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: not the kept build (%d bytes, %v)", out, len(got), err)
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", out, err)
		}
	}

	// A module in the temporary directory: built, not kept.
	mod, err := os.MkdirTemp("", "module-")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"go.mod": "module tmpfn\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := buildKept(ctx, lambdart.Deployed(mod, "."), filepath.Join(t.TempDir(), "bootstrap")); err != nil {
		t.Fatal(err)
	}
	if again, _ := filepath.Glob(filepath.Join(cache, "builds", "*", "bootstrap")); len(again) != 1 {
		t.Errorf("after a module in the temporary directory: kept builds %v, want still the one", again)
	}

	// The sweep: a lock held keeps it, then an old one goes.
	dir := filepath.Dir(kept[0])
	unlock, err := lockFile(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	sweepKeptBuilds(time.Now().Add(time.Hour))
	if _, err := os.Stat(kept[0]); err != nil {
		t.Errorf("swept while a kit held its lock: %v", err)
	}
	unlock()
	sweepKeptBuilds(time.Now().Add(-time.Hour))
	if _, err := os.Stat(kept[0]); err != nil {
		t.Errorf("swept though used within the cutoff: %v", err)
	}
	sweepKeptBuilds(time.Now().Add(time.Hour))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("not swept past the cutoff: %v", err)
	}
	if _, err := exec.LookPath(outs[0]); err != nil {
		t.Errorf("the kit's copy went with the sweep: %v", err)
	}
}
