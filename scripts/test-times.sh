#!/usr/bin/env bash
# test-times.sh: runs `make test` once, timing each step (scripts/step.sh's STEP_TIMES) and
# sampling every process's CPU time every 2 s, then writes what it measured into
# docs/development.md between its "test-times" markers: each step's time, the slowest
# packages, and where the CPU went by kind of process (node: the jsii kernels and the CDK CLI;
# java: DynamoDB Local and ElasticMQ; link and compile: Go's toolchain). A process that lives
# less than the 2 s between samples is missed, and the sampler itself costs a few percent of a
# core. The figures are written only when make test passes. Run by `make test-times`; not in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/test-times
mkdir -p "$out"
rm -f "$out/steps.tsv" "$out/samples.txt"

sampler() {
  while :; do
    for f in /proc/[0-9]*/stat; do
      read -r line <"$f" 2>/dev/null || continue
      pid=${line%% *}
      comm=${line#*(}
      comm=${comm%%)*}
      rest=${line##*) }
      # shellcheck disable=SC2086
      set -- $rest
      # utime and stime are the stat file's fields 14 and 15: 12 and 13 after the name.
      echo "$pid ${comm// /_} $((${12} + ${13}))"
    done
    echo "--"
    sleep 2
  done >>"$out/samples.txt" 2>/dev/null
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u +%Y-%m-%dT%H:%MZ)
sampler &
sampler_pid=$!
trap 'kill "$sampler_pid" 2>/dev/null || true' EXIT
t0=$SECONDS
rc=0
STEP_TIMES=$PWD/$out/steps.tsv make test 2>&1 | tee "$out/make-test.log" || rc=$?
wall=$((SECONDS - t0))
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out" "$wall" "$rc" "$start" "$load_before" "$load_after" "$(nproc)" <<'EOF'
import re, sys, collections
out, wall, rc, start, load_before, load_after, cores = sys.argv[1:]
wall, rc = int(wall), int(rc)
hz = 100  # USER_HZ: /proc's clock ticks

steps = [l.rstrip("\n").split("\t") for l in open(f"{out}/steps.tsv")]
first, peak = set(), {}
seen_first = False
for line in open(f"{out}/samples.txt"):
    if line.startswith("--"):
        seen_first = True
        continue
    pid, comm, ticks = line.split()
    if not seen_first:
        first.add(pid)  # running before make test: not its work
        continue
    if pid in first:
        continue
    peak[(pid, comm)] = max(peak.get((pid, comm), 0), int(ticks))
kinds, counts = collections.Counter(), collections.Counter()
for (pid, comm), ticks in peak.items():
    kind = "Go test binaries" if comm.endswith(".test") or comm.endswith(".tes") else comm
    kinds[kind] += ticks / hz
    counts[kind] += 1
total = sum(kinds.values())

pkgs = []
for line in open(f"{out}/make-test.log"):
    m = re.match(r"^ok\s+(\S+)\s+([0-9.]+)s", line)
    if m:
        pkgs.append((float(m.group(2)), m.group(1)))
pkgs.sort(reverse=True)

def mmss(s):
    return f"{s // 60} min {s % 60:02d} s"

lines = [
    f"`make test-times` on {start}: `make test` took **{mmss(wall)}** on {cores} cores, load average {load_before} before and {load_after} after.",
    "",
    "| step | time |",
    "|---|---|",
]
for what, secs, code in steps:
    lines.append(f"| {what} | {mmss(int(secs))}{'' if code == '0' else ' (failed)'} |")
lines += ["", "Slowest test packages (`go test`'s own figure for each):", ""]
lines += [f"- `{p.replace('github.com/idempotent-sqs/pipeline/', '')}`: {s:.0f} s" for s, p in pkgs[:8]]
lines += ["", f"CPU by kind of process, {total:.0f} s in all (sampled every 2 s; {int(cores) * wall} s of CPU were there):", "",
          "| process | CPU | processes |", "|---|---|---|"]
for kind, secs in kinds.most_common(8):
    lines.append(f"| {kind} | {secs:.0f} s ({100 * secs / total:.0f}%) | {counts[kind]} |")
block = "\n".join(lines)
print(block)
if rc != 0:
    print(f"\nmake test failed (exit {rc}): docs/development.md is not changed", file=sys.stderr)
    sys.exit(rc)
path = "docs/development.md"
doc = open(path).read()
begin, end = "<!-- test-times:begin (scripts/test-times.sh writes this) -->", "<!-- test-times:end -->"
if begin not in doc or end not in doc:
    sys.exit(f"{path} has no test-times markers")
head, rest = doc.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w").write(head + begin + "\n" + block + "\n" + end + tail)
print(f"\nwritten to {path}")
EOF
