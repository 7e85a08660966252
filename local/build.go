package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The start's fourth stage, build: an executable for this machine of every function that
// runs, from the plans (plan.go) to a path per function (rebuild.go and buildcache.go hold
// how one is built).

// build builds the functions into a directory of the kit's own, holding its lock, after
// removing those of kits that are gone.
func (k *Kit) build(ctx context.Context, plans []*stackPlan) (map[string]string, error) {
	sweepStale()
	sweepKeptBuilds(time.Now().Add(-keptBuildsFor))
	var err error
	if k.binDir, err = os.MkdirTemp("", binDirPrefix); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if k.binLock, err = holdLock(k.binDir, binLockName); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return k.buildEach(ctx, plans)
}

// buildEach compiles the source of every function that runs, once per source, for this
// machine; a function whose code is a bootstrap executable in the assembly runs as it is.
func (k *Kit) buildEach(ctx context.Context, plans []*stackPlan) (map[string]string, error) {
	bins := map[string]string{}  // "<stack id>/<function>" -> bootstrap
	built := map[string]string{} // go build's directory and command line -> bootstrap
	for _, sp := range plans {
		for _, id := range slices.Sorted(maps.Keys(sp.code)) {
			c := sp.code[id]
			if c.zip != "" {
				out, err := k.unzip(c)
				if err != nil {
					return nil, fmt.Errorf("local: stack %s: function %s: %w", sp.ref.DisplayName, id, err)
				}
				bins[sp.ref.ID+"/"+id] = out
				continue
			}
			if c.src == nil && c.rebuilt == nil {
				bins[sp.ref.ID+"/"+id] = c.bootstrap
				continue
			}
			spec, what, alt := c.spec()
			key := strings.Join(slices.Concat(spec.Env, spec.Args(), []string{spec.Dir}), "\x00")
			if out, ok := built[key]; ok {
				bins[sp.ref.ID+"/"+id] = out
				continue
			}
			sum := sha256.Sum256([]byte(key))
			out := filepath.Join(k.binDir, hex.EncodeToString(sum[:8]), "bootstrap")
			if err := buildCode(ctx, spec, what, alt, out, k.opts.Progress); err != nil {
				return nil, fmt.Errorf("local: stack %s: function %s: %w", sp.ref.DisplayName, id, err)
			}
			built[key], bins[sp.ref.ID+"/"+id] = out, out
		}
	}
	return bins, nil
}

// unzip extracts the executable of a zip asset into the kit's directory, once per zip.
func (k *Kit) unzip(c code) (string, error) {
	sum := sha256.Sum256([]byte(c.zip + "\x00" + c.member))
	out := filepath.Join(k.binDir, hex.EncodeToString(sum[:8]), c.member)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	b, _, err := zipMember(c.zip, c.member)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	return out, os.WriteFile(out, b, 0o755)
}
