#!/usr/bin/env bash
# test-times.sh: runs `make test` once, timing each step (scripts/step.sh's STEP_TIMES) and
# sampling every process's CPU time every 2 s, then writes what it measured into
# docs/development.md between its "test-times" markers: each step's time, the slowest
# packages, and where the CPU went by kind of process (node: the jsii kernels and the CDK CLI;
# java: DynamoDB Local and ElasticMQ; link and compile: Go's toolchain) and by test package
# (each process counted to the outermost test binary it runs under). A process that lives
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
      # utime and stime are the stat file's fields 14 and 15: 12 and 13 after the name; the
      # parent's pid is field 4, 2 after the name (for CPU by test package).
      echo "$pid ${comm// /_} $((${12} + ${13})) $2"
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
STEP_TIMES=$PWD/$out/steps.tsv make --no-print-directory test 2>&1 | tee "$out/make-test.log" || rc=$?
wall=$((SECONDS - t0))
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 scripts/test_times_report.py "$out" "$wall" "$rc" "$start" "$load_before" "$load_after" "$(nproc)"
