#!/usr/bin/env python3
"""Sum meson test logs (JSON lines) of every lane into the closing line.

Arguments are log paths (DIR/meson-logs/BASE.json; the lane is DIR, or
DIR:BASE when BASE is not "lane") or "skip:LANE:REASON" for a lane that
could not run here, which counts as one skipped test.
Prints failed and skipped tests by lane, then "N passed, N failed[, N skipped]".
Exit status 1 when any test failed or a lane left no log.
"""
import json
import os
import sys

passed = failed = skipped = 0
bad = []
for path in sys.argv[1:]:
    if path.startswith('skip:'):
        _, lane, reason = path.split(':', 2)
        skipped += 1
        bad.append(f'{lane}: skipped ({reason})')
        continue
    lane = path.split('/')[0]
    base = os.path.splitext(os.path.basename(path))[0]
    if base != 'lane':
        lane += ':' + base
    try:
        lines = open(path).read().splitlines()
    except OSError:
        bad.append(f'{lane}: no test log (the lane did not run)')
        failed += 1
        continue
    for line in lines:
        t = json.loads(line)
        r = t['result']
        if r in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif r == 'SKIP':
            skipped += 1
            bad.append(f"{lane}: skipped {t['name']}")
        else:
            failed += 1
            bad.append(f"{lane}: {r} {t['name']}")
for b in bad:
    print(b)
summary = f'{passed} passed, {failed} failed'
if skipped:
    summary += f', {skipped} skipped'
print(summary)
sys.exit(1 if failed else 0)
