#!/usr/bin/env bash
# make test-stress: runs make test's Go tests N times with two CPU hogs beside them (`yes`,
# at normal priority), as CI shares its 2 cores with other work, and prints each failing test
# with how many runs it failed in. A test that fails in any run is a broken test.
#
# The Makefile passes the commands make test runs, so both run the same tests:
#   N        runs (default 20)
#   UNIT     go test ./...
#   EXAMPLES the examples' module tests
#   E2E_CORE the core e2e scenarios
# Logs: .cache/stress/run-<i>-<step>.log. Ctrl-C stops the run in progress, the hogs with it.
set -u
n=${N:-20}
dir=.cache/stress
rm -rf "$dir"
mkdir -p "$dir"

hogs=()
for _ in 1 2; do
  yes >/dev/null &
  hogs+=($!)
done
declare -A failed=()   # test (or step) -> runs it failed in; =() so that set -u takes it for empty, not unset
runs_done=0
summary() {
  echo
  echo "test-stress: $runs_done of $n runs done with two CPU hogs (logs in $dir)"
  if [ ${#failed[@]} -eq 0 ]; then
    echo "no test failed"
  else
    echo "failed (runs out of $runs_done):"
    for t in "${!failed[@]}"; do printf '  %-70s %d\n' "$t" "${failed[$t]}"; done | sort
  fi
}
stop() {
  kill "${hogs[@]}" 2>/dev/null
  wait "${hogs[@]}" 2>/dev/null
}
interrupted() {
  stop
  summary
  echo "interrupted in run $((runs_done + 1)): its logs so far are in $dir; the hogs are stopped; rerun make test-stress N=$n to start again"
  exit 3
}
trap interrupted INT TERM

load() { cut -d' ' -f1 /proc/loadavg; }

for i in $(seq 1 "$n"); do
  start=$(date +%s)
  load0=$(load)
  line=""
  for step in unit examples e2e-core; do
    case $step in
      unit) cmd=$UNIT ;;
      examples) cmd=$EXAMPLES ;;
      e2e-core) cmd=$E2E_CORE ;;
    esac
    log=$dir/run-$i-$step.log
    if bash -c "$cmd" >"$log" 2>&1; then
      line+=" $step ok"
      continue
    fi
    names=$(sed -n 's/^ *--- FAIL: \([^ ]*\).*/\1/p' "$log" | sort -u)
    if [ -z "$names" ]; then
      names="$step:no-test-named(see-$log)"
    fi
    for t in $names; do failed[$t]=$(( ${failed[$t]:-0} + 1 )); done
    line+=" $step FAIL ($(echo $names | tr '\n' ' '))"
  done
  runs_done=$i
  echo "run $i/$n: $(( $(date +%s) - start )) s, load $load0 -> $(load):$line"
done
stop
summary
[ ${#failed[@]} -eq 0 ]
