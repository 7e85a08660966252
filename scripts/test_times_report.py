#!/usr/bin/env python3
"""test_times_report.py OUT WALL RC START LOAD_BEFORE LOAD_AFTER CORES: what scripts/test-times.sh
measured (OUT/steps.tsv, OUT/samples.txt, OUT/make-test.log) as Markdown, printed and, when
make test passed (RC 0), written into docs/development.md between its test-times markers."""
import re, sys, collections
out, wall, rc, start, load_before, load_after, cores = sys.argv[1:]
wall, rc = int(wall), int(rc)
hz = 100  # USER_HZ: /proc's clock ticks

steps = [l.rstrip("\n").split("\t") for l in open(f"{out}/steps.tsv")]
first, peak, parent, name = set(), {}, {}, {}
seen_first = False
for line in open(f"{out}/samples.txt"):
    if line.startswith("--"):
        seen_first = True
        continue
    pid, comm, ticks, ppid = line.split()
    parent.setdefault(pid, ppid)  # the first parent seen: an orphan is adopted by init later
    name[pid] = comm
    if not seen_first:
        first.add(pid)  # running before make test: not its work
        continue
    if pid in first:
        continue
    peak[(pid, comm)] = max(peak.get((pid, comm), 0), int(ticks))
def is_test(comm):
    return comm.endswith(".test") or comm.endswith(".tes")  # the kernel keeps 15 characters

kinds, counts = collections.Counter(), collections.Counter()
for (pid, comm), ticks in peak.items():
    kind = "Go test binaries" if is_test(comm) else comm
    kinds[kind] += ticks / hz
    counts[kind] += 1
total = sum(kinds.values())

def package(pid):
    """The outermost test binary pid runs under (a module's own tests, run by a test of this
    repository, count to the latter), or None for make's own steps (builds, synths)."""
    found, seen = None, set()
    while pid in name and pid not in seen:
        seen.add(pid)
        if is_test(name[pid]):
            found = re.sub(r"\.tes?t?$", "", name[pid])
        pid = parent.get(pid)
    return found

by_pkg, by_pkg_kind = collections.Counter(), collections.defaultdict(collections.Counter)
for (pid, comm), ticks in peak.items():
    pkg = package(pid) or "(none: go build, link and vet, the synths of make's steps)"
    by_pkg[pkg] += ticks / hz
    by_pkg_kind[pkg]["java" if comm == "java" else "node" if comm == "node" else "other"] += ticks / hz

pkgs = []
for line in open(f"{out}/make-test.log"):
    m = re.match(r"^ok\s+(\S+)\s+([0-9.]+)s", line)
    if m:
        pkgs.append((float(m.group(2)), m.group(1)))
pkgs.sort(reverse=True)

def mmss(s):
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60} s"

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
lines += ["", "CPU by test package (each process counted to the outermost test binary it runs under; the name is the binary's, as the kernel keeps it):", "",
          "| package | CPU | java | node | other |", "|---|---|---|---|---|"]
for pkg, secs in by_pkg.most_common(12):
    k = by_pkg_kind[pkg]
    lines.append(f"| {pkg} | {secs:.0f} s ({100 * secs / total:.0f}%) | {k['java']:.0f} s | {k['node']:.0f} s | {k['other']:.0f} s |")
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
