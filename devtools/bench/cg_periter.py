#!/usr/bin/env python3
"""Instructions per iteration of a whole process, from two callgrind runs.

    cg_periter.py --label TEXT SHORT_OUT SHORT_ITERS LONG_OUT LONG_ITERS [--json FILE]

The same program ran twice under callgrind, SHORT_ITERS and LONG_ITERS
iterations (a ping-pong's round trips). What the runs share (start-up,
connection, teardown) cancels in the difference, so

    (instructions of LONG - instructions of SHORT) / (LONG_ITERS - SHORT_ITERS)

is what one iteration costs, whatever threads the program runs. Each
*_OUT may be a callgrind file or the stem of --separate-threads files
(every thread is summed). Prints the total and the functions that cost at
least 2 instructions per iteration (self counts). Used by profile.sh to
put rdp-perf's ping-pong client next to ucx_perftest's tag_lat client.
"""
import argparse
import glob
import json
import re
import subprocess
import sys


def functions(stem):
    """{function: self instructions} summed over the run's thread files."""
    files = sorted(glob.glob(stem + '-*')) or [stem]
    total = {}
    for f in files:
        out = subprocess.run(['callgrind_annotate', '--threshold=100', f],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(?:\S*?:)?([\w.@?]+)(?: \[|$)', line)
            if m and 'PROGRAM TOTALS' not in line:
                total[m.group(2)] = total.get(m.group(2), 0) + int(m.group(1).replace(',', ''))
            m = re.match(r'\s*([\d,]+) \([^)]*\)\s+PROGRAM TOTALS', line)
            if m:
                total[' total'] = total.get(' total', 0) + int(m.group(1).replace(',', ''))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--label', required=True)
    ap.add_argument('--json')
    ap.add_argument('short_out')
    ap.add_argument('short_iters', type=int)
    ap.add_argument('long_out')
    ap.add_argument('long_iters', type=int)
    a = ap.parse_args()
    if a.long_iters <= a.short_iters:
        sys.exit('cg_periter.py: the long run must have more iterations')
    s, l = functions(a.short_out), functions(a.long_out)
    if ' total' not in s or ' total' not in l:
        sys.exit('cg_periter.py: no callgrind totals in %s or %s' % (a.short_out, a.long_out))
    n = a.long_iters - a.short_iters
    per = {k: (l.get(k, 0) - s.get(k, 0)) / n for k in set(s) | set(l)}
    print('%s: %.0f instructions per iteration (whole process, %d - %d iterations)'
          % (a.label, per[' total'], a.long_iters, a.short_iters))
    for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
        if k != ' total' and v >= 2:
            print('  %8.1f  %s' % (v, k))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'label': a.label, 'per_iteration': per[' total'],
                       'functions': {k: v for k, v in per.items() if k != ' total' and v >= 2}},
                      f, indent=2)


if __name__ == '__main__':
    main()
