#!/usr/bin/env bash
# step.sh [--log FILE] WHAT HOW-LONG -- COMMAND [ARG...]
#
# Runs COMMAND as one step of a Makefile target that can take long on a new machine. Before it
# starts, one line says what it does and how long it takes; while it runs, a line a minute says
# it is still going, so a first run never looks hung. With --log FILE the command's output goes
# to FILE and is shown (its last 60 lines) only if the command fails: for tools whose console
# output is noise when they succeed. The exit status is the command's. At the end one line
# says how long it took; with STEP_TIMES=FILE, the step's name, seconds and exit status are
# also appended to FILE, tab-separated (scripts/test-times.sh reads them).
set -euo pipefail
log=
if [ "${1:-}" = --log ]; then log=$2; shift 2; fi
[ $# -ge 4 ] && [ "$3" = -- ] || { echo "usage: step.sh [--log FILE] WHAT HOW-LONG -- COMMAND [ARG...]" >&2; exit 2; }
what=$1 howlong=$2
shift 3

echo "--> $what ($howlong)"
tick=${STEP_TICK_SECONDS:-60}
(
  n=0
  # sleep's own output goes nowhere: killed at the end, the loop must leave nothing holding
  # the console (a pipe from make would otherwise stay open until the sleep ends).
  while sleep "$tick" >/dev/null 2>&1 </dev/null; do
    n=$((n + tick))
    echo "    ... still $what: $((n / 60)) min $((n % 60)) s"
  done
) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true' EXIT

start=$SECONDS
took() {
  local rc=$1 s=$((SECONDS - start))
  echo "<-- $what: $((s / 60)) min $((s % 60)) s"
  if [ -n "${STEP_TIMES:-}" ]; then
    printf '%s\t%d\t%d\n' "$what" "$s" "$rc" >>"$STEP_TIMES"
  fi
}
if [ -z "$log" ]; then
  rc=0
  "$@" || rc=$?
  took "$rc"
  exit "$rc"
fi
mkdir -p "$(dirname "$log")"
if "$@" >"$log" 2>&1; then
  took 0
  exit 0
else
  rc=$?
  tail -n 60 "$log"
  echo "($what failed with exit status $rc; full output in $log)"
  took "$rc"
  exit "$rc"
fi
