"""Writes the rehearsals' step times (scripts/rehearse-times.sh's logs) into a document,
between its "rehearse-times" markers: one column per rehearsed app, one row per step."""
import os
import re
import sys

out, path, start, load_before, load_after = sys.argv[1:6]

STEP = re.compile(r"^(\S.*?)\s+(ok|FAIL|STOP)\s+(\S+)  ")
DONE = re.compile(r"^rehearse: every step passed in (\S+);")
UNIT = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


def seconds(d):
    """A Go duration as the rehearsal prints it (1m2.5s, 38.8s, 100ms) in seconds."""
    total = 0.0
    for n, unit in re.findall(r"([\d.]+)(ms|h|m|s)", d):
        total += float(n) * UNIT[unit]
    return total


def spoken(s):
    if s < 1:
        return "%d ms" % round(s * 1000)
    if s < 60:
        return "%.1f s" % s
    return "%d min %d s" % (s // 60, round(s % 60))


def runs(log):
    """The rehearsals of a log, each a list of (step, seconds) and its total."""
    found, steps = [], []
    for line in open(log):
        m = STEP.match(line)
        if m:
            if m.group(2) != "ok":
                sys.exit("%s: step %s did not pass: figures not written" % (log, m.group(1)))
            steps.append((m.group(1), seconds(m.group(3))))
        d = DONE.match(line)
        if d:
            found.append((steps, seconds(d.group(1))))
            steps = []
    return found


ref = runs(os.path.join(out, "rehearse.log"))
examples = runs(os.path.join(out, "rehearse-examples.log"))
if len(ref) != 1 or len(examples) != 2:
    sys.exit("want 1 rehearsal in make rehearse and 2 in make rehearse-examples, found %d and %d: figures not written" % (len(ref), len(examples)))
apps = [("reference (`make rehearse`)", ref[0]), ("examples/orders", examples[0]), ("examples/platform", examples[1])]
order = []
for _, (steps, _) in apps:
    for name, _ in steps:
        if name not in order:
            order.append(name)
rows = ["| step | " + " | ".join(a for a, _ in apps) + " |", "|---|" + "---|" * len(apps)]
for name in order:
    cells = []
    for _, (steps, _) in apps:
        took = [s for n, s in steps if n == name]
        cells.append(spoken(took[0]) if took else "")
    rows.append("| " + name + " | " + " | ".join(cells) + " |")
rows.append("| **whole run** | " + " | ".join("**%s**" % spoken(total) for _, (_, total) in apps) + " |")
test_s = int(open(os.path.join(out, "rehearse-test.seconds")).read())
block = "\n".join([
    "Measured by `make rehearse-times` on %s (load average %s before, %s after), warm:" % (start, load_before, load_after),
    "",
] + rows + [
    "",
    "`make rehearse-test` (the rehearsal's own tests) took %s." % spoken(test_s),
])
doc = open(path).read()
begin, end = "<!-- rehearse-times:begin (scripts/rehearse-times.sh writes this) -->", "<!-- rehearse-times:end -->"
if begin not in doc or end not in doc:
    sys.exit("%s has no rehearse-times markers" % path)
head, rest = doc.split(begin, 1)
tail = rest.split(end, 1)[1]
open(path, "w").write(head + begin + "\n" + block + "\n" + end + tail)
print("rehearse-times: written into %s" % path)
