#!/usr/bin/env python3
"""Same-state pairs of pairs.sh: medians of rdmaplane / UCX per state.

Reads lines "KIND ITERATION UCX_BEFORE UCX_AFTER RDP RDP_DEFAULT" on stdin
(KIND bw: msg/s, RDP with devtools/bench/stream.ini, RDP_DEFAULT with the
default configuration; KIND lat: p50 ns, RDP_DEFAULT unused). A pair counts
when its two UCX runs agree within AGREE; it belongs to the fast state when
UCX ran at more than half of its reference speed in that kind (the 90th
percentile of its runs: a lone run far faster than the rest, as UCX's
coarse latency clock sometimes reports, must not move the line), else to
the slow one. Prints a table and, with --json, writes every pair and the medians.
"""
import argparse
import json
import math
import statistics
import sys

AGREE = 0.15


def num(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return None if math.isnan(v) or v <= 0 else v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--json')
    a = ap.parse_args()
    pairs = []
    for line in sys.stdin:
        f = line.split()
        if len(f) != 6:
            continue
        kind, it = f[0], int(f[1])
        u1, u2, r, d = (num(x) for x in f[2:])
        pairs.append({'kind': kind, 'iteration': it, 'ucx_before': u1, 'ucx_after': u2,
                      'rdp': r, 'rdp_default': d})
    for kind in ('bw', 'lat'):
        ps = [p for p in pairs if p['kind'] == kind]
        ucx = [v for p in ps for v in (p['ucx_before'], p['ucx_after']) if v]
        if not ucx:
            continue
        # speed: msg/s as is, latency inverted
        speeds = sorted(v if kind == 'bw' else 1 / v for v in ucx)
        best = speeds[int(0.9 * (len(speeds) - 1))]
        for p in ps:
            u1, u2 = p['ucx_before'], p['ucx_after']
            p['counted'] = bool(u1 and u2 and abs(u1 - u2) <= AGREE * max(u1, u2))
            if not p['counted']:
                continue
            u = (u1 + u2) / 2
            speed = u if kind == 'bw' else 1 / u
            p['state'] = 'fast' if speed > best / 2 else 'slow'
            p['ratio'] = p['rdp'] / u if p['rdp'] else None
            p['ratio_default'] = p['rdp_default'] / u if p['rdp_default'] else None
    medians = {}
    rows = [('64 B rate, queues of 64 (stream.ini) / UCX tag_bw', 'bw', 'ratio', '>= 1.00'),
            ('64 B rate, default queues / UCX tag_bw', 'bw', 'ratio_default', None),
            ('64 B latency p50 / UCX tag_lat', 'lat', 'ratio', '<= 1.00')]
    print('| ratio (target) | state | pairs | median | min-max |')
    print('|---|---|---|---|---|')
    for name, kind, key, target in rows:
        for state in ('fast', 'slow'):
            v = [p[key] for p in pairs if p['kind'] == kind and p.get('counted') and
                 p.get('state') == state and p.get(key)]
            if not v:
                continue
            m = statistics.median(v)
            medians['%s/%s' % (key if kind == 'bw' else 'lat', state)] = m
            print('| %s%s | %s | %d | %.2fx | %.2fx - %.2fx |' % (
                name, ' (%s)' % target if target else '', state, len(v), m, min(v), max(v)))
    skipped = sum(1 for p in pairs if not p.get('counted'))
    print('\n%d pair(s), %d left out: their two UCX runs disagree (the state changed) or '
          'a run failed' % (len(pairs), skipped))
    if a.json:
        with open(a.json, 'w') as fh:
            json.dump({'agree': AGREE, 'pairs': pairs, 'medians': medians}, fh, indent=1)
    # a smoke run must have produced numbers from both sides
    if not any(p['rdp'] for p in pairs) or not any(p['ucx_before'] for p in pairs):
        sys.exit('pairs_report: no rdp-perf or no UCX result at all')


if __name__ == '__main__':
    main()
