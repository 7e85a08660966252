#!/usr/bin/env bash
# Profiles the deployed consumer binary where Lambda bills it: under the CPU quota of a
# 256 MB function, every DynamoDB call delayed 4 ms, through the peer benchmark's Runtime API
# (test/bench/peers), at batches of 10 and 100, with the raw-write loop profiled beside it in
# the same run. Writes the figures to a directory (docs/profiles for the committed ones):
#
#   test/bench/profile_binary.sh docs/profiles after          # the working tree
#   test/bench/profile_binary.sh docs/profiles before 46013e8 # the consumer of a commit
#
# For each batch size: <label>-bin-b<N>-cpu.txt (pprof -top of ours), -raw-cpu.txt (of the raw
# loop), -costs.md (both summed by kind of cost with test/bench/profile_costs.py), <label>-bin-b<N>.txt
# (the benchmark's rows) and, when graphviz's dot is installed, <label>-bin-b<N>-cpu.svg. The
# consumer is built with the deployed flags plus the cpuprofile tag (functions/consumer/
# cpuprofile.go, copied into the commit's tree when it has none), which writes a profile of
# the process's first PROFILE_SECONDS (default 30); each run must last longer than that, so it
# has PROFILE_RECORDS records (default 500 per second of profile: ours does about 300 records/s
# at 256 MB; unconfined, without root, it is several times faster and needs more).
# PROFILE_RAW, a directory, keeps the pprof files. Needs root for the quota (see the peers
# benchmark); without it the benchmark says so and runs unconfined.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(cd "${1:?usage: profile_binary.sh OUTDIR LABEL [REV]}" && pwd)
LABEL=${2:?usage: profile_binary.sh OUTDIR LABEL [REV]}
REV=${3:-}
SECS=${PROFILE_SECONDS:-30}
GO=${GO:-go}
cd "$ROOT"
work=$(mktemp -d)
cleanup() {
  if [ -n "$REV" ]; then git worktree remove --force "$work/tree" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
src=$ROOT
if [ -n "$REV" ]; then
  git worktree add --detach "$work/tree" "$REV" >/dev/null 2>&1
  src=$work/tree
  cp functions/consumer/cpuprofile.go "$src/functions/consumer/"
fi
for batch in 10 100; do
  name="$LABEL-bin-b$batch"
  echo "profile: deployed binary, batch $batch, ${SECS}s" >&2
  (cd "$src" && CGO_ENABLED=0 $GO build -trimpath -tags lambda.norpc,cpuprofile \
    -ldflags "-s -w -X main.cpuProfile=$work/ours.pprof -X main.cpuProfileSeconds=$SECS" \
    -o "$work/bootstrap" ./functions/consumer)
  PEERS_RAW_CPUPROFILE="$work/raw.pprof" $GO run ./test/bench/peers -records "${PROFILE_RECORDS:-$((SECS * 500))}" -rounds 1 -warmup 30 \
    -batches "$batch" -memory 256 -latency 4ms -count=false -contenders cand,raw -candidate "$work/bootstrap" \
    -out "$work/peers.md" >/dev/null 2>"$work/peers.log" || { cat "$work/peers.log" >&2; exit 1; }
  if [ ! -s "$work/ours.pprof" ]; then
    echo "profile: the run ended before the consumer's ${SECS}s profile was written: raise PROFILE_RECORDS" >&2
    exit 1
  fi
  grep -E '^\| 256 MB' "$work/peers.md" |
    sed -E 's#candidate: consumer built as [^|]*/bootstrap#ours: the consumer built with -tags cpuprofile#' >"$OUT/$name.txt"
  $GO tool pprof -top -nodecount 40 "$work/bootstrap" "$work/ours.pprof" >"$OUT/$name-cpu.txt" 2>/dev/null
  $GO tool pprof -top -nodecount 40 "$work/raw.pprof" >"$OUT/$name-raw-cpu.txt" 2>/dev/null
  python3 - "$OUT/$name.txt" <(test/bench/profile_costs.py "$work/ours.pprof") \
    <(test/bench/profile_costs.py "$work/raw.pprof") >"$OUT/$name-costs.md" <<'PY'
import re, sys
# CPU µs per record of each contender, from the benchmark's rows (6th column).
rows = [r.split("|") for r in open(sys.argv[1]) if r.startswith("|")]
us = {("raw" if "raw writes" in r[3] else "ours"): float(r[6].strip().replace(",", "")) for r in rows}
def shares(path):
    out = {}
    for line in open(path):
        m = re.match(r"\| (.*) \| ([0-9.]+)% \|", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out
ours, raw = shares(sys.argv[2]), shares(sys.argv[3])
print("| kind of cost (CPU) | ours | ours µs per record | raw loop | raw µs per record |")
print("|---|---:|---:|---:|---:|")
for kind in sorted(set(ours) | set(raw), key=lambda k: -ours.get(k, 0)):
    cell = lambda d, who: ("%.1f%% | %.0f" % (d[kind], d[kind] * us[who] / 100)) if kind in d else "– | –"
    print("| %s | %s | %s |" % (kind, cell(ours, "ours"), cell(raw, "raw")))
print("| total (CPU µs per record, from the benchmark) | 100% | %.0f | 100%% | %.0f |".replace("100% |", "100%% |") % (us["ours"], us["raw"]))
PY
  if command -v dot >/dev/null; then
    $GO tool pprof -svg -nodecount 60 "$work/bootstrap" "$work/ours.pprof" >"$OUT/$name-cpu.svg" 2>/dev/null
  fi
  if [ -n "${PROFILE_RAW:-}" ]; then
    cp "$work/ours.pprof" "$PROFILE_RAW/$name.cpu.pprof"
    cp "$work/raw.pprof" "$PROFILE_RAW/$name-raw.cpu.pprof"
  fi
done
echo "profile: wrote $OUT/$LABEL-bin-*" >&2
