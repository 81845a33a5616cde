#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The report of the bracketed comparisons (devtools/bench/onesided.sh, rndv.sh).

Reads rows "NAME SIZE REF1 REF2 RDP" (operations per second: the reference
before, the reference after, the subject between them) and prints, per NAME
and SIZE, the pairs that count (REF1 and REF2 within 15 %), the median of
their ratios RDP / mean(REF1, REF2), and the medians of both rates, in
GB/s (10^9 bytes) and in operations per second. Exits 1 when no rdp-perf
run gave a figure (a tool failed), whatever the pairs say about speed.
"""
import statistics
import sys

AGREE = 0.15


def parse(lines):
    groups = {}
    for line in lines:
        f = line.split()
        if len(f) != 5:
            continue
        try:
            r1, r2, v = (float(x) for x in f[2:])
        except ValueError:
            continue
        groups.setdefault((f[0], int(f[1])), []).append((r1, r2, v))
    return groups


def counted(pairs):
    """Pairs whose two references are numbers that agree, and a rdmaplane figure."""
    out = []
    for r1, r2, v in pairs:
        if r1 != r1 or r2 != r2 or v != v or min(r1, r2) <= 0:
            continue
        if abs(r1 - r2) / min(r1, r2) <= AGREE:
            out.append(((r1 + r2) / 2, v))
    return out


def main():
    groups = parse(sys.stdin)
    if not groups:
        print("bracket_report: no rows")
        return 1
    print("%-24s %8s %6s %8s %10s %10s %12s %12s" %
          ("comparison", "size", "pairs", "ratio", "rdp GB/s", "ref GB/s", "rdp ops/s",
           "ref ops/s"))
    for (name, size), pairs in groups.items():
        ok = counted(pairs)
        if not ok:
            print("%-24s %8d %3d/%-2d %8s" % (name, size, 0, len(pairs), "n/a"))
            continue
        ratio = statistics.median(v / ref for ref, v in ok)
        ref = statistics.median(r for r, _ in ok)
        rdp = statistics.median(v for _, v in ok)
        print("%-24s %8d %3d/%-2d %7.2fx %10.1f %10.1f %12.0f %12.0f" %
              (name, size, len(ok), len(pairs), ratio, rdp * size / 1e9, ref * size / 1e9,
               rdp, ref))
    measured = any(v == v for pairs in groups.values() for _, _, v in pairs)
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
