#!/usr/bin/env bash
# Runs every benchmark once at a tiny size (make bench-smoke, part of make check): it proves each
# still runs and judges no figure. make bench runs them at full size (test/bench/report.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-1x}
mkdir -p .cache
set -x
$GO test -run '^$' -bench . -benchtime "$BENCHTIME" ./functions/... ./internal/lambdart/
$GO run ./test/bench/peers -records 200 -rounds 1
# The Lambda-shaped path once, at a tiny size: the cgroup, the quota, the raw loop's process.
$GO run ./test/bench/peers -records 20 -rounds 1 -warmup 10 -batches 10 -memory 1769 -latency 1ms -count=false -json .cache/quota-smoke.json
$GO run ./test/bench/coldstart -n 2
$GO run ./test/bench/cost/measure -batches 2 >.cache/cost-smoke.json
$GO run ./test/bench/cost -in .cache/cost-smoke.json -lambda .cache/quota-smoke.json
RUNS=1 PKGS=./functions/internal/backoff test/bench/devloop.sh
# The deployed binary's profile under the quota, briefly: the cpuprofile build and the raw
# loop's profile.
d=$(mktemp -d)
PROFILE_SECONDS=1 PROFILE_RECORDS=2000 test/bench/profile_binary.sh "$d" smoke
rm -rf "$d"
