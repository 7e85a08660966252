#!/usr/bin/env python3
"""Lists the checkov checks the synthesized templates skip on purpose, with their reasons.

The constructs record each skip on the resource it concerns (resource Metadata
"checkov": {"skip": [{"id", "comment"}]}, written by constructs/internal/checkov); checkov counts
them as skipped in its summary line. This prints what those skips are, one line per check with
the number of resources and the reason, so the console says why, not only how many.

usage: checkov_skips.py cdk.out
"""
import collections
import glob
import json
import os
import sys


def main(assembly):
    skips = collections.OrderedDict()  # (id, comment) -> resources
    for path in sorted(glob.glob(os.path.join(assembly, "*.template.json"))):
        with open(path) as f:
            template = json.load(f)
        for logical_id, resource in template.get("Resources", {}).items():
            for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
                skips.setdefault((skip["id"], skip.get("comment", "")), []).append(logical_id)
    if not skips:
        print("checkov: no check skipped")
        return
    total = sum(len(r) for r in skips.values())
    print(f"checkov: {total} skipped on purpose, each recorded on its resource with the reason:")
    for (check, comment), resources in sorted(skips.items()):
        print(f"  {check} on {len(resources)} resource{'s' if len(resources) > 1 else ''}: {comment}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
