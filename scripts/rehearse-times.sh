#!/usr/bin/env bash
# rehearse-times.sh: runs the three rehearsals once each (make rehearse, make
# rehearse-examples, make rehearse-test) and writes what each step took into
# docs/development.md between its "rehearse-times" markers, from the step lines the
# rehearsal prints. The figures are written only when all three pass. Run by
# `make rehearse-times`; not in CI (CI runs the same rehearsals in make check).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/rehearse-times
mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u +%Y-%m-%dT%H:%MZ)
for target in rehearse rehearse-examples rehearse-test; do
  t0=$SECONDS
  make --no-print-directory "$target" 2>&1 | tee "$out/$target.log"
  echo "$((SECONDS - t0))" >"$out/$target.seconds"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
python3 scripts/rehearse_times_report.py "$out" docs/development.md "$start" "$load_before" "$load_after"
