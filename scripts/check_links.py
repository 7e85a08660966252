"""Fails when a Markdown file in the repository links to a file or a section that does not exist.

Checks every relative link ([text](path), [text](path#anchor) and [text](#anchor)) in the
tracked Markdown files, resolved against the linking file's directory: the file must exist,
and an anchor into a Markdown file must be one of its headings' anchors, as GitHub makes
them (lower case; letters, digits, '-' and '_' kept, spaces made '-', the rest dropped; a
repeated anchor gets -1, -2, ...) or an HTML anchor (<a id="..."> or <a name="...">). Web
and mail links are not followed. Run from the repository root: python3 scripts/check_links.py
"""

import os
import re
import subprocess
import sys

LINK = re.compile(r"\]\(\s*<?([^)\s>#]*)(?:#([^)\s>]*))?>?(?:\s+\"[^\"]*\")?\s*\)")
SKIP = ("http://", "https://", "mailto:")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def github_anchor(heading):
    """The anchor GitHub gives a heading's text (formatting characters dropped with the rest)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def lines_outside_fences(lines):
    """Yields (line number, line) for each line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


_anchors = {}


def anchors_of(path):
    """The anchors of the Markdown file at path: its headings' and its HTML anchors."""
    if path not in _anchors:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        found, seen = set(), {}
        for _, line in lines_outside_fences(lines):
            found.update(HTML_ANCHOR.findall(line))
            m = HEADING.match(line)
            if not m:
                continue
            a = github_anchor(m.group(2))
            n = seen.get(a, 0)
            seen[a] = n + 1
            found.add(a if n == 0 else f"{a}-{n}")
        _anchors[path] = found
    return _anchors[path]


def broken_links(files):
    """Yields (file, line number, target, why) for each relative link that leads nowhere."""
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for number, line in lines_outside_fences(lines):
            for target, anchor in LINK.findall(line):
                if target.startswith(SKIP) or (not target and not anchor):
                    continue
                resolved = os.path.join(os.path.dirname(path), target) if target else path
                shown = target + ("#" + anchor if anchor else "")
                if not os.path.exists(resolved):
                    yield path, number, shown, "which does not exist"
                elif anchor and resolved.endswith(".md") and anchor not in anchors_of(resolved):
                    yield path, number, shown, f"but {os.path.normpath(resolved)} has no heading with that anchor"


def main():
    files = sys.argv[1:] or subprocess.run(
        ["git", "ls-files", "*.md"], check=True, capture_output=True, text=True
    ).stdout.split()
    bad = list(broken_links(files))
    for path, number, target, why in bad:
        print(f"{path}:{number}: link to {target}, {why}")
    if bad:
        print(f"{len(bad)} broken relative links in Markdown files")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
