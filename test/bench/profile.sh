#!/usr/bin/env bash
# Profiles the consumer's library path (functions/consume's BenchmarkHandleBatch: the real
# Handler and Guard on DynamoDB Local) at batches of 10 and 100, CPU and allocations, and
# writes the figures to a directory (docs/profiles for the committed ones):
#
#   test/bench/profile.sh docs/profiles after      # files named after-b10-cpu.txt, ...
#
# For each batch size: <label>-b<N>-cpu.txt and -alloc.txt (pprof -top), <label>-b<N>.txt
# (the benchmark line) and, when graphviz's dot is installed, <label>-b<N>-cpu.svg (the call
# graph). Run it on the tree to profile; the before figures in docs/profiles came from the
# commit named there. PROFILE_B10 and PROFILE_B100 set the iterations; PROFILE_RAW, a
# directory, keeps the pprof files there (<label>-b<N>.cpu.pprof, .mem.pprof) for
# test/bench/profile_costs.py, which sums a profile by kind of cost.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(cd "${1:?usage: profile.sh OUTDIR LABEL}" && pwd)
LABEL=${2:?usage: profile.sh OUTDIR LABEL}
GO=${GO:-go}
cd "$ROOT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for spec in "10 ${PROFILE_B10:-200}" "100 ${PROFILE_B100:-20}"; do
  read -r batch n <<<"$spec"
  name="$LABEL-b$batch"
  echo "profile: batch $batch, $n invocations" >&2
  $GO test -run '^$' -bench "^BenchmarkHandleBatch\$/^batch=$batch\$/^pool=main\$" -benchtime "${n}x" -benchmem \
    -cpuprofile "$work/cpu" -memprofile "$work/mem" -o "$work/consume.test" ./functions/consume >"$work/bench.txt"
  grep -E '^(Benchmark|cpu:)' "$work/bench.txt" >"$OUT/$name.txt"
  $GO tool pprof -top -nodecount 40 "$work/consume.test" "$work/cpu" >"$OUT/$name-cpu.txt" 2>/dev/null
  $GO tool pprof -sample_index=alloc_space -top -nodecount 40 "$work/consume.test" "$work/mem" >"$OUT/$name-alloc.txt" 2>/dev/null
  if [ -n "${PROFILE_RAW:-}" ]; then
    cp "$work/cpu" "$PROFILE_RAW/$name.cpu.pprof"
    cp "$work/mem" "$PROFILE_RAW/$name.mem.pprof"
  fi
  if command -v dot >/dev/null; then
    $GO tool pprof -svg -nodecount 60 "$work/consume.test" "$work/cpu" >"$OUT/$name-cpu.svg" 2>/dev/null
  fi
done
echo "profile: wrote $OUT/$LABEL-*" >&2
