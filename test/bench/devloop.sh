#!/usr/bin/env bash
# Developer-loop figures, as a markdown section written to the file given (default
# stdout):
#   1. warm synth of the full app (the command `make synth` runs: cdk synth --quiet) vs a
#      one-function app bundled the same way (test/bench/onefn), median of RUNS with min-max,
#      alternated so load on the shared machine hits both alike;
#   2. per test package: wall time of `go test -count=1` (warm build cache, one package at a
#      time), and the number of app synths it performed, MEASURED: each package runs with its
#      own empty TMPDIR while devloop_watch.py (inotify) reports every CDK app assembly
#      directory created there (cdk.out*, one per app constructed without an explicit
#      outdir) and every manifest.json written (one per app synth, t.TempDir() outdirs
#      included). A second synth of the same app reuses its assembly, so this counts
#      distinct app synths, which is what costs time; an outdir outside TMPDIR is not seen.
#
#   test/bench/devloop.sh [OUT.md]        RUNS=3 PKGS='./...' to change the defaults
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${1:-/dev/stdout}
RUNS=${RUNS:-3}
PKGS=${PKGS:-./...}
CDK=${CDK:-$ROOT/node_modules/.bin/cdk}
export PATH="$ROOT/node_modules/.bin:$PATH"
export DYNAMODB_LOCAL_DIR=${DYNAMODB_LOCAL_DIR:-$ROOT/.cache/dynamodb-local}
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1
[ -x "$CDK" ] || { echo "devloop: $CDK missing: run make tools" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
# stats FILE -> "median (min-max)" of the numbers in FILE, seconds with 1 decimal
stats() { sort -g "$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.1f s (%.1f-%.1f)", m, v[1], v[NR]}'; }
median() { sort -g "$1" | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }

synth() { # dir outfile; the assembly of the last synth stays in $work/last-<basename of dir>
  local t0 t1 out="$work/last-$(basename "$1")"
  rm -rf "$out"
  t0=$(now)
  (cd "$1" && "$CDK" synth --quiet -o "$out" >/dev/null 2>"$work/synth.err") \
    || { cat "$work/synth.err" >&2; echo "devloop: synth in $1 failed" >&2; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc >>"$2"
}

echo "devloop: warming up both apps (first synth builds the bundles and the app)" >&2
synth "$ROOT" /dev/null
synth "$ROOT/test/bench/onefn" /dev/null
: >"$work/full" ; : >"$work/one"
for i in $(seq "$RUNS"); do
  echo "devloop: synth run $i/$RUNS" >&2
  synth "$ROOT" "$work/full"
  synth "$ROOT/test/bench/onefn" "$work/one"
done
ratio=$(echo "scale=2; $(median "$work/full") / $(median "$work/one")" | bc)
# CDK's own performance counters of the last synth of each app (ms): where the time goes.
counters() {
  python3 - "$1/performance-counters.json" <<'PY'
import json, os, sys
if not os.path.exists(sys.argv[1]):
    print(" | ".join(["(not written for this synth)"] + [""] * 4))
    sys.exit()
c = json.load(open(sys.argv[1]))["counters"]
keys = ["phase:Construction", "phase:Synthesis", "validateTemplates", "CloudFormationValidate.validate", "GoFunction#tryBundle"]
print(" | ".join("%.1f s" % (c.get(k, 0) / 1000) + ("" if k != "GoFunction#tryBundle" else " (%d)" % c.get(k + "(cnt)", 0)) for k in keys))
PY
}

echo "devloop: building test binaries (warm cache)" >&2
go test -count=1 -run '^$' $PKGS >/dev/null
rows=""
for pkg in $(go list $PKGS); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  ls "$dir"/*_test.go >/dev/null 2>&1 || continue
  tmp="$work/tmp-${pkg//\//_}"; mkdir -p "$tmp"
  echo "devloop: go test $pkg" >&2
  t0=$(now)
  status=pass
  python3 "$ROOT/test/bench/devloop_watch.py" "$tmp" >"$work/watch" &
  watcher=$!
  until grep -q '^ready$' "$work/watch" 2>/dev/null; do sleep 0.05; done
  TMPDIR=$tmp go test -count=1 "$pkg" >"$work/test.out" 2>&1 || status=FAIL
  t1=$(now)
  sleep 0.2; kill "$watcher"; wait "$watcher" 2>/dev/null || true
  apps=$({ grep '^app ' "$work/watch" || true; } | sort -u | wc -l)
  synths=$({ grep '^synth ' "$work/watch" || true; } | sort -u | wc -l)
  rows+="| \`${pkg#github.com/idempotent-sqs/pipeline/}\` | $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s | $synths | $apps | $status |"$'\n'
done

{
  echo "### Developer loop"
  echo
  echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) shared cores ($(go env GOVERSION), $("$CDK" --version 2>/dev/null | head -1)) with \`test/bench/devloop.sh\`;"
  echo "timings on this shared machine are noisy: compare ratios, not absolute seconds."
  echo
  echo "| Warm synth (\`cdk synth --quiet\`, validation on) | median (min-max), $RUNS runs |"
  echo "|---|---|"
  echo "| full app (\`make synth\`) | $(stats "$work/full") |"
  echo "| one-function app (\`test/bench/onefn\`) | $(stats "$work/one") |"
  echo "| **ratio** (goal <= 1.5x) | **${ratio}x** |"
  echo
  full_pc="$work/last-$(basename "$ROOT")/performance-counters.json"
  if [ -f "$full_pc" ] || [ -f "$work/last-onefn/performance-counters.json" ]; then
    echo "Inside the last synth of each (CDK's \`performance-counters.json\`; this CDK version writes it only for slow synths):"
    echo
    echo "| App | construction | synthesis | of which validateTemplates | of which CloudFormationValidate | GoFunction bundling (count) |"
    echo "|---|---:|---:|---:|---:|---:|"
    echo "| full | $(counters "$work/last-$(basename "$ROOT")") |"
    echo "| one-function | $(counters "$work/last-onefn") |"
    echo
  fi
  echo "| Test package | \`go test -count=1\` wall time (warm build cache, one package at a time) | App synths (goal <= 2) | Apps created | Result |"
  echo "|---|---:|---:|---:|---|"
  printf '%s' "$rows"
  echo
  echo "App synths are counted, not grepped: each package runs with an empty TMPDIR, watched with inotify by"
  echo "\`test/bench/devloop_watch.py\`; every app synth writes a \`manifest.json\` there (\"App synths\"), and every app"
  echo "constructed without an explicit outdir creates a \`cdk.out*\` directory (\"Apps created\"; an app created but"
  echo "never synthesized, e.g. a scratch app for validation panics, costs little)."
} >"$OUT"
echo "devloop: wrote $OUT" >&2
