#!/usr/bin/env python3
"""Sums a Go pprof profile by kind of cost, as markdown table rows.

    test/bench/profile_costs.py PROFILE            # CPU: by kind (GC, syscalls, SDK, ours, ...)
    test/bench/profile_costs.py PROFILE alloc_space  # allocations: by owner (SDK, net/http, ours, ...)

For CPU each sample goes to the first kind that matches it: garbage collection, allocation,
goroutine scheduling, stack growth and syscalls by the runtime frames at its top; otherwise the
first frame, from the top of the stack down, that belongs to our packages (functions/...), the
AWS SDK (split into signing, JSON and the rest), net/http, log/slog or encoding/json. For
allocations each sample goes to the first such owner from the top down. test/bench/profile.sh
writes the profiles (PROFILE_RAW).
"""
import collections
import re
import subprocess
import sys

OURS = "idempotent-sqs/pipeline/functions/"
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "ms": 1, "s": 1000, "us": 0.001}


def owner(names):
    """The first owner, from the top of the stack down, and the index of its frame."""
    for i, f in enumerate(names):
        if OURS in f and "bench" not in f.lower():
            return "ours (" + f.split("functions/")[1].split(".")[0] + ")", i
        if "aws-sdk-go-v2" in f or "smithy-go" in f:
            return SDK, i
        if f.startswith(("net/http", "net.", "net/textproto", "bufio")):
            return "net/http (client transport)", i
        if f.startswith("log/slog"):
            return "log/slog", i
        if f.startswith("encoding/json"):
            return "encoding/json (outside the SDK: key extraction, the benchmark's effect)", i
        if "functions/consume.bench" in f or f.startswith("testing."):
            return "benchmark harness", i
    return "other", -1


SDK = "SDK (aws-sdk-go-v2, smithy-go)"


def cpu_kind(names):
    joined = " ".join(names)
    leaf = names[0]
    if re.search(r"gcBgMarkWorker|gcDrain|bgsweep|bgscavenge|gcStart|markroot|scanobject|sweepone|gcAssist", joined):
        return "GC (garbage collection)"
    if leaf.startswith("runtime.") and re.search(
        r"runtime\.(mallocgc|newobject|makeslice|makemap|growslice|mapassign|rawstring|rawbyteslice|concatstring|slicebytetostring)", joined):
        return "allocation (mallocgc, map and slice growth)"
    if leaf.startswith("runtime.") and re.search(
        r"runtime\.(schedule|findRunnable|park_m|mcall|goexit|newproc|gopark|futex|notesleep|stopm|startm|wakep)", joined):
        return "goroutine scheduling"
    if re.search(r"runtime\.(newstack|copystack|morestack)", joined):
        return "goroutine stack growth"
    if re.search(r"syscall|internal/poll|epoll|netpoll", leaf):
        return "syscalls (network I/O)"
    kind, i = owner(names)
    if kind == SDK:
        if re.search(r"signer|sha256|hmac", " ".join(names[: i + 1])):
            return "SDK: SigV4 signing and payload hash"
        if re.search(r"json|Serialize|Deserialize|awsjson|document", names[i]):
            return "SDK: JSON (de)serialization"
        return "SDK: middleware stack, endpoint, auth, the rest"
    if kind == "other" and leaf.startswith("runtime."):
        return "runtime, other"
    return kind


def main():
    prof = sys.argv[1]
    idx = sys.argv[2] if len(sys.argv) > 2 else ""
    args = ["go", "tool", "pprof"] + (["-sample_index=" + idx] if idx else []) + ["-traces", prof]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    totals = collections.Counter()
    total = 0.0
    for block in out.split("-----------+-------------------------------------------------------"):
        lines = [l for l in block.strip("\n").split("\n") if l.strip() and not l.strip().startswith("bytes:")]
        if not lines:
            continue
        m = re.match(r"\s*([\d.]+)(ms|s|us|B|kB|MB|GB)\s+(.*)", lines[0])
        if not m:
            continue
        v = float(m.group(1)) * UNITS[m.group(2)]
        names = [m.group(3).strip()] + [l.strip() for l in lines[1:]]
        if any(n.startswith("runtime/pprof.") for n in names):
            continue  # the profiler's own work
        kind = owner(names)[0] if idx else cpu_kind(names)
        totals[kind] += v
        total += v
    for kind, v in totals.most_common():
        print(f"| {kind} | {v / total * 100:.1f}% |")
    print(f"| total | {total / 1e6:.0f} MB |" if idx else f"| total | {total / 1000:.2f} s of CPU |")


if __name__ == "__main__":
    main()
