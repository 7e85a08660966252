package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// keptBuildsFor is how long a function's build is kept in the user's cache unused.
const keptBuildsFor = 7 * 24 * time.Hour

// buildKept builds s into out, as lambdart.BuildSpec does. Most of a build whose source
// has not changed is the link, and go build skips it when its output is already up to date:
// so the output is kept in the user's cache (CacheDir()/builds/<key>), built there under a
// lock (another kit may build the same source at the same time), and copied to out, which
// is what runs (a running executable cannot be rewritten). A module in the temporary
// directory, whose next run is another directory, is built straight into out, as is every
// build where there is no cache directory or no file lock.
func buildKept(ctx context.Context, s lambdart.Spec, out string) error {
	cache, err := CacheDir()
	if err != nil || !sharedBuilds || isTemp(s.Dir) || slices.ContainsFunc(s.Pkgs, isTemp) {
		return lambdart.BuildSpec(ctx, s, out)
	}
	key := slices.Concat([]string{s.Dir, runtime.GOOS, runtime.GOARCH}, s.Pkgs, []string{"\x01"}, s.Flags, []string{"\x01"}, s.Env)
	sum := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	kept := filepath.Join(cache, "builds", hex.EncodeToString(sum[:12]))
	if err := os.MkdirAll(kept, 0o755); err != nil {
		return lambdart.BuildSpec(ctx, s, out)
	}
	unlock, err := lockFile(ctx, filepath.Join(kept, "lock"))
	if err != nil {
		return err
	}
	defer unlock()
	bin := filepath.Join(kept, "bootstrap")
	if err := lambdart.BuildSpec(ctx, s, bin); err != nil {
		return err
	}
	now := time.Now()
	os.Chtimes(bin, now, now) // used now: sweepKeptBuilds keeps it
	return copyExecutable(bin, out)
}

// isTemp says whether path is in the temporary directory.
func isTemp(path string) bool {
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		tmp = os.TempDir()
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	rel, err := filepath.Rel(tmp, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// copyExecutable copies src to dst (created with its directory), executable.
func copyExecutable(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sweepKeptBuilds removes the kept builds last used before cutoff, each only when no kit
// holds its lock.
func sweepKeptBuilds(cutoff time.Time) {
	cache, err := CacheDir()
	if err != nil || !sharedBuilds {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "builds", "*"))
	for _, d := range dirs {
		fi, err := os.Stat(filepath.Join(d, "bootstrap"))
		if err == nil && fi.ModTime().After(cutoff) {
			continue
		}
		done, cancel := context.WithCancel(context.Background())
		cancel() // one try: a kit building there now keeps it
		if unlock, err := lockFile(done, filepath.Join(d, "lock")); err == nil {
			os.RemoveAll(d)
			unlock()
		}
	}
}
