#!/usr/bin/env python3
"""Report of an ab.sh run: rates per variant and machine state, and each
variant against the reference as the median of the ratios within rounds,
with a bootstrap 90 % interval (its half-width is what the run resolves).
Runs of a latency mode carry their p50 too (lat_p50_ns): it gets the same
report, its ratio the variant's p50 over the reference's (above 1 is slower).

A run is fast when the cache-line probes on both sides of it read fast by
report.py's rule, slow when both read slow; a run between two states counts
in neither. A round's ratio needs the variant's run and the reference's run
of that round in the same state.

    devtools/bench/ab.py RUN.jsonl [--ref NAME] [--expect A,B,...] [--json OUT]
    devtools/bench/ab.py --self-test

--expect: fail unless each of these variants has a run with a rate above 0
(ab.sh passes its variants; the smoke test relies on it).
"""
import argparse
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import FAST_BELOW_NS  # noqa: E402  (one rule for every bench table)

BOOTSTRAP = 2000
MIN_ROUNDS = 5  # fewer paired rounds give no interval worth printing


def state_of(run, fast_below):
    kinds = {'fast' if run[k] < fast_below else 'slow'
             for k in ('probe_before_ns', 'probe_after_ns')}
    return kinds.pop() if len(kinds) == 1 else 'changed'


def interval(values, rng):
    """Bootstrap 90 % interval of the median of values."""
    if len(values) < 2:
        return (values[0], values[0]) if values else (None, None)
    meds = sorted(statistics.median(rng.choices(values, k=len(values)))
                  for _ in range(BOOTSTRAP))
    return meds[int(0.05 * BOOTSTRAP)], meds[int(0.95 * BOOTSTRAP) - 1]


def analyse(runs, ref, fast_below, key='msg_rate'):
    """Variants' medians of @key by state, and their ratios to @ref's."""
    if key != 'msg_rate':
        runs = [r for r in runs if r.get(key, 0) > 0]  # a p50 only where one was measured
    names = list(dict.fromkeys(r['name'] for r in runs))
    if ref is None:
        ref = names[0]
    if ref not in names:
        raise SystemExit('ab.py: no run of the reference %s with %s' % (ref, key))
    for r in runs:
        r['state'] = state_of(r, fast_below)
    rng = random.Random(1)
    out = {'ref': ref, 'key': key, 'fast_below_ns': fast_below, 'variants': {},
           'against_ref': {}}
    for name in names:
        per = {}
        for st in ('fast', 'slow'):
            rates = [r[key] for r in runs if r['name'] == name and r['state'] == st]
            if rates:
                per[st] = {'runs': len(rates), 'median': statistics.median(rates),
                           'min': min(rates), 'max': max(rates)}
        per['runs'] = sum(1 for r in runs if r['name'] == name)
        out['variants'][name] = per
    by_round = {}
    for r in runs:
        by_round.setdefault(r['round'], {})[r['name']] = r
    for name in names:
        if name == ref:
            continue
        res = {}
        for st in ('fast', 'slow'):
            ratios = [rd[name][key] / rd[ref][key] for rd in by_round.values()
                      if name in rd and ref in rd and rd[name]['state'] == st and
                      rd[ref]['state'] == st and rd[ref][key] > 0]
            if ratios:
                lo, hi = interval(ratios, rng)
                res[st] = {'rounds': len(ratios), 'median': statistics.median(ratios),
                           'lo90': lo, 'hi90': hi}
        out['against_ref'][name] = res
    return out


UNITS = {'msg_rate': ('median M msg/s', 1e6), 'lat_p50_ns': ('median p50 ns ', 1)}


def render(rep):
    head, scale = UNITS[rep['key']]
    lines = ['variant          state  runs  %s  (min-max)' % head]
    for name, per in rep['variants'].items():
        for st in ('fast', 'slow'):
            if st in per:
                v = per[st]
                lines.append('%-16s %-5s %5d  %14.2f  (%.2f-%.2f)' % (
                    name, st, v['runs'], v['median'] / scale, v['min'] / scale,
                    v['max'] / scale))
        if not any(st in per for st in ('fast', 'slow')):
            lines.append('%-16s every run changed state (%d runs)' % (name, per['runs']))
    lines.append('')
    lines.append('against %s: median of the ratios within rounds%s, bootstrap 90 %% interval'
                 % (rep['ref'], ' (p50 over p50)' if rep['key'] == 'lat_p50_ns' else ''))
    for name, res in rep['against_ref'].items():
        for st in ('fast', 'slow'):
            if st in res:
                v = res[st]
                if v['rounds'] < MIN_ROUNDS:
                    lines.append('%-16s %-5s %3d rounds  %.3fx  (too few rounds for an '
                                 'interval)' % (name, st, v['rounds'], v['median']))
                    continue
                lines.append('%-16s %-5s %3d rounds  %.3fx  [%.3f, %.3f]  resolves +-%.1f %%' % (
                    name, st, v['rounds'], v['median'], v['lo90'], v['hi90'],
                    50 * (v['hi90'] - v['lo90']) / v['median']))
        if not res:
            lines.append('%-16s no round with both runs in one state' % name)
    return '\n'.join(lines)


def has_key(runs, key):
    return any(r.get(key, 0) > 0 for r in runs)


def self_test():
    """The pairing by round and state, on made-up runs with known ratios."""
    def run(rnd, name, rate, before, after):
        # a ping-pong's p50 follows its rate: a round trip is 2 p50s
        return {'round': rnd, 'name': name, 'msg_rate': rate, 'lat_p50_ns': 0.5e9 / rate,
                'probe_before_ns': before, 'probe_after_ns': after}
    runs = []
    for rnd in range(1, 7):  # fast rounds: b is 1.10x a
        runs += [run(rnd, 'a', 10e6 + rnd, 40, 40), run(rnd, 'b', 1.1 * (10e6 + rnd), 40, 40)]
    for rnd in range(7, 10):  # slow rounds: b is 1.20x a
        runs += [run(rnd, 'a', 5e6, 200, 200), run(rnd, 'b', 6e6, 200, 200)]
    # the state changed around b's run: the round pairs nothing, whatever b read
    runs += [run(10, 'a', 10e6, 40, 40), run(10, 'b', 99e6, 40, 200)]
    rep = analyse(runs, 'a', FAST_BELOW_NS)
    fast, slow = rep['against_ref']['b']['fast'], rep['against_ref']['b']['slow']
    checks = [
        (fast['rounds'] == 6, 'fast rounds %d, expected 6' % fast['rounds']),
        (abs(fast['median'] - 1.1) < 1e-9, 'fast ratio %.4f, expected 1.1' % fast['median']),
        (fast['lo90'] <= 1.1 <= fast['hi90'], 'fast interval misses 1.1'),
        (slow['rounds'] == 3, 'slow rounds %d, expected 3' % slow['rounds']),
        (abs(slow['median'] - 1.2) < 1e-9, 'slow ratio %.4f, expected 1.2' % slow['median']),
        (rep['variants']['b']['fast']['max'] < 20e6, 'a run between states was counted'),
    ]
    lat = analyse(runs, 'a', FAST_BELOW_NS, 'lat_p50_ns')['against_ref']['b']['fast']
    checks += [
        (lat['rounds'] == 6, 'fast p50 rounds %d, expected 6' % lat['rounds']),
        (abs(lat['median'] - 1 / 1.1) < 1e-9, 'fast p50 ratio %.4f, expected 1/1.1'
         % lat['median']),
    ]
    # runs without a p50 (a stream) report none
    streams = [dict(r, lat_p50_ns=0) for r in runs]
    checks.append((not has_key(streams, 'lat_p50_ns'), 'a stream reported a p50'))
    failed = [why for ok, why in checks if not ok]
    for why in failed:
        print('ab.py self-test: ' + why)
    print('ab.py self-test: %d of %d checks passed' % (len(checks) - len(failed), len(checks)))
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ['--self-test']:
        sys.exit(self_test())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('jsonl')
    ap.add_argument('--ref')
    ap.add_argument('--json')
    ap.add_argument('--expect', default='')
    ap.add_argument('--fast-below', type=float, default=FAST_BELOW_NS)
    args = ap.parse_args()
    with open(args.jsonl) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    if not runs:
        raise SystemExit('ab.py: %s holds no run' % args.jsonl)
    missing = [n for n in filter(None, args.expect.split(','))
               if not any(r['name'] == n and r['msg_rate'] > 0 for r in runs)]
    if missing:
        raise SystemExit('ab.py: no run with a rate for %s' % ', '.join(missing))
    rep = analyse(runs, args.ref, args.fast_below)
    print(render(rep))
    if has_key(runs, 'lat_p50_ns'):
        rep['p50'] = analyse(runs, args.ref, args.fast_below, 'lat_p50_ns')
        print('')
        print(render(rep['p50']))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(rep, f, indent=1)


if __name__ == '__main__':
    main()
