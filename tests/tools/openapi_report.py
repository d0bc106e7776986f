#!/usr/bin/python3
"""Sum up the OpenAPI conformance reports of every GitLab simulator run.

    openapi_report.py --reset DIR    empty DIR (before the tests)
    openapi_report.py DIR            print the totals; exit 1 on a violation

Each simulator started with PB_OPENAPI_REPORT_DIR=DIR checks every request
it receives and every response it gives against GitLab's OpenAPI document
(tests/forgesim/gitlabsim/conformance.py) and keeps its counts in
DIR/forgesim-PID.json.  This prints

    validated N requests and M responses against GitLab's OpenAPI document
    (K simulator runs): V violations

then the violations kept as examples, and fails when there is one, or when
nothing was validated at all (the check did not run).
"""

import glob
import json
import os
import shutil
import sys


def main(argv):
    if len(argv) == 3 and argv[1] == "--reset":
        shutil.rmtree(argv[2], ignore_errors=True)
        os.makedirs(argv[2])
        return 0
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    totals = {"requests": 0, "responses": 0, "violations": 0}
    examples = []
    runs = 0
    for path in sorted(glob.glob(os.path.join(argv[1], "forgesim-*.json"))):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print("openapi: %s: unreadable report: %s" % (path, e))
            totals["violations"] += 1
            continue
        runs += 1
        for key in totals:
            totals[key] += int(data.get(key, 0))
        examples += data.get("examples", [])
    print("validated %d requests and %d responses against GitLab's OpenAPI "
          "document (%d simulator runs): %d violations" % (
              totals["requests"], totals["responses"], runs,
              totals["violations"]))
    for e in examples[:40]:
        print("  %s\n    %s" % (e.get("request"), e.get("problem")))
    if len(examples) > 40:
        print("  ... and %d more" % (len(examples) - 40))
    if totals["requests"] == 0:
        print("openapi: nothing was validated: no simulator wrote a report "
              "to %s" % argv[1])
        return 1
    return 1 if totals["violations"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
