#!/usr/bin/env bash
# Runs every benchmark with figures and writes them, with the commands that made
# them, to the markdown file given (make bench: docs/benchmarks.md). Takes about 25 minutes;
# run it on a quiet machine: every headline figure is a ratio against a peer measured in the
# same run, but a loaded machine still widens the ranges.
#
#   test/bench/report.sh docs/benchmarks.md
#   PEERS_ARGS, PEERS_LATENCY, QUOTA_ARGS, QUOTA_MEMORY, COLDSTART_N, COST_BATCHES, DEVLOOP_RUNS, BENCHTIME change the sizes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${1:?usage: report.sh OUT.md}
PEERS_ARGS=${PEERS_ARGS:--records 2000 -rounds 3}
COLDSTART_N=${COLDSTART_N:-20}
COST_BATCHES=${COST_BATCHES:-20}
PEERS_LATENCY=${PEERS_LATENCY:-4ms}
# Lambda-shaped runs: fewer records than the unconfined ones, since at 128 MB a contender gets
# 7% of a core (Powertools Python about 15 records/s).
QUOTA_ARGS=${QUOTA_ARGS:--records 400 -rounds 3 -warmup 20}
QUOTA_MEMORY=${QUOTA_MEMORY:-128,256,1024,1769}
DEVLOOP_RUNS=${DEVLOOP_RUNS:-3}
BENCHTIME=${BENCHTIME:-1s}
GO=${GO:-go}
work=$(mktemp -d)
# The 1-minute load average every 30 s while the benchmarks run: the header reports its range.
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
touch "$work/load"
( while :; do cut -d' ' -f1 /proc/loadavg >>"$work/load"; sleep 30; done ) &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true; rm -rf "$work" || echo "bench: could not remove $work" >&2' EXIT
# Taken now: writing OUT below would make the tree look changed.
rev="$(git rev-parse --short HEAD)$(git diff --quiet || echo ' with uncommitted changes')"

subsection() { # heading prefix, file: that subsection, up to the next "### " heading
  awk -v h="$1" 'index($0, h) == 1 {on = 1; print; next} on && /^### / {exit} on {print}' "$2"
}

section() { # title, command (shown and run), then the output file it wrote
  printf '\n## %s\n\n```sh\n%s\n```\n\n' "$1" "$2" >>"$work/body.md"
}

echo "bench: peers ($PEERS_ARGS)" >&2
# shellcheck disable=SC2086
$GO run ./test/bench/peers $PEERS_ARGS -out "$work/peers.md" >/dev/null
section "1. Peer comparison: our consumer vs Powertools for AWS Lambda (TypeScript, Python) vs the raw-write limit" \
  "go run ./test/bench/peers $PEERS_ARGS -out peers.md"
cat "$work/peers.md" >>"$work/body.md"

echo "bench: peers with a modelled network round trip ($PEERS_ARGS -latency $PEERS_LATENCY)" >&2
# shellcheck disable=SC2086
$GO run ./test/bench/peers $PEERS_ARGS -latency "$PEERS_LATENCY" -out "$work/peers-latency.md" >/dev/null
section "1b. The same comparison with every DynamoDB call delayed by $PEERS_LATENCY (a model of a real network round trip, not a measurement of DynamoDB)" \
  "go run ./test/bench/peers $PEERS_ARGS -latency $PEERS_LATENCY -out peers-latency.md"
subsection "### Targets" "$work/peers-latency.md" >>"$work/body.md"
subsection "### Throughput" "$work/peers-latency.md" >>"$work/body.md"

echo "bench: Lambda-shaped runs ($QUOTA_ARGS -memory $QUOTA_MEMORY -latency $PEERS_LATENCY)" >&2
# shellcheck disable=SC2086
$GO run ./test/bench/peers $QUOTA_ARGS -memory "$QUOTA_MEMORY" -latency "$PEERS_LATENCY" -out "$work/peers-quota.md" -json "$work/peers-quota.json" >/dev/null
section "1c. Lambda-shaped: each contender under Lambda's CPU share of a memory size, every DynamoDB call delayed by $PEERS_LATENCY; records/s per execution environment and cost per million records" \
  "go run ./test/bench/peers $QUOTA_ARGS -memory $QUOTA_MEMORY -latency $PEERS_LATENCY -out peers-quota.md -json peers-quota.json"
awk '/^### Lambda-shaped runs/ {on = 1} on {print}' "$work/peers-quota.md" >>"$work/body.md"
if grep -q '^### DynamoDB calls' "$work/peers-quota.md"; then
  echo >>"$work/body.md"
  subsection "### DynamoDB calls" "$work/peers-quota.md" >>"$work/body.md"
fi

echo "bench: cost floor ($COST_BATCHES batches)" >&2
$GO run ./test/bench/cost/measure -batches "$COST_BATCHES" >"$work/cost.json"
$GO run ./test/bench/cost -in "$work/cost.json" -lambda "$work/peers-quota.json" >"$work/cost.md"
section "2. Cost floor: calls per message, measured, and cost per million messages and per month for three load profiles under both table capacity modes" \
  "go run ./test/bench/cost/measure -batches $COST_BATCHES > cost.json && go run ./test/bench/cost -in cost.json -lambda peers-quota.json"
cat "$work/cost.md" >>"$work/body.md"

echo "bench: cold start (n=$COLDSTART_N)" >&2
$GO run ./test/bench/coldstart -n "$COLDSTART_N" -out "$work/coldstart.md" >/dev/null
section "3. Cold-start proxy: binary size and init time beside a hello-world" \
  "go run ./test/bench/coldstart -n $COLDSTART_N"
cat "$work/coldstart.md" >>"$work/body.md"

echo "bench: developer loop (runs=$DEVLOOP_RUNS)" >&2
RUNS=$DEVLOOP_RUNS test/bench/devloop.sh "$work/devloop.md"
section "4. Developer loop: synth time, test time and synths per test package" \
  "RUNS=$DEVLOOP_RUNS test/bench/devloop.sh"
cat "$work/devloop.md" >>"$work/body.md"

echo "bench: Go benchmarks (benchtime $BENCHTIME)" >&2
$GO test -run '^$' -bench . -benchtime "$BENCHTIME" ./functions/... ./internal/lambdart/ ./test/bench/peers/ >"$work/go.txt"
section "5. Go benchmarks of the runtime packages" \
  "go test -run '^\$' -bench . -benchtime $BENCHTIME ./functions/... ./internal/lambdart/ ./test/bench/peers/"
{ echo '```'; grep -E '^(Benchmark|goos|goarch|cpu|pkg)' "$work/go.txt"; echo '```'; } >>"$work/body.md"

if [ -f docs/profiles/README.md ]; then
  section "6. Where the consumer's CPU goes: profiles before and after" \
    "test/bench/profile.sh docs/profiles after   # on each tree; see docs/profiles/README.md"
  # The profiles' own page, its links made relative to this one.
  awk 'NR > 1' docs/profiles/README.md | sed -E 's/^## /### /; s/\]\(([a-z0-9-]+\.(svg|txt|md))\)/](profiles\/\1)/g' >>"$work/body.md"
fi

kill "$sampler" 2>/dev/null || true
load_during=$(sort -n "$work/load" | awk '{a[NR] = $1} END {if (NR) printf "%s to %s (median %s, %d samples)", a[1], a[NR], a[int((NR + 1) / 2)], NR}')

{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` (\`test/bench/report.sh\`) on $(date -u +%Y-%m-%d) at commit $rev."
  echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB, $($GO version | cut -d' ' -f3-4), load average at start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Load average (1 min) during the run, every 30 s: ${load_during:-not sampled}."
  echo "The machine is shared and noisy: each figure is a median with its min-max, and the headline figures are ratios against a peer measured alternately in the same run."
  cat "$work/body.md"
} >"$OUT"
echo "bench: wrote $OUT" >&2
