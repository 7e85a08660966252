"""Fails when a Markdown file in the repository links to a file that does not exist.

Checks every relative link target ([text](path) and [text](path#anchor)) in the tracked
Markdown files, resolved against the linking file's directory. Web, mail and in-page links
are not followed. Run from the repository root: python3 scripts/check_links.py
"""

import os
import re
import subprocess
import sys

LINK = re.compile(r"\]\(\s*<?([^)\s>#]+)(?:#[^)\s>]*)?>?(?:\s+\"[^\"]*\")?\s*\)")
SKIP = ("http://", "https://", "mailto:")


def broken_links(files):
    """Yields (file, line number, target) for each relative link whose target is missing."""
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        fenced = False
        for number, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                if target.startswith(SKIP):
                    continue
                if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                    yield path, number, target


def main():
    files = sys.argv[1:] or subprocess.run(
        ["git", "ls-files", "*.md"], check=True, capture_output=True, text=True
    ).stdout.split()
    bad = list(broken_links(files))
    for path, number, target in bad:
        print(f"{path}:{number}: link to {target}, which does not exist")
    if bad:
        print(f"{len(bad)} broken relative links in Markdown files")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
