#!/usr/bin/env python3
"""Summarise a devtools/bench/run.sh run: medians, ratios, targets.

Reads OUT/index.tsv and the raw outputs under OUT/raw/, classifies every
run as fast or slow by the cache-line probes just before and after it
("changed" when they disagree), computes each comparison as a ratio
*within its round* and takes medians per state of the ratios whose two
runs were both in that state. Each round's state (its first and last
probes) is reported too.
Writes OUT/bench.json and OUT/summary.md and prints the summary. Exit
status 1 when a run that should have produced numbers did not.
"""
import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys

FAST_BELOW_NS = 100.0  # cache-line one-way: ~40 ns fast, ~230 ns slow here


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    ap.add_argument('--mode', default='full')
    ap.add_argument('--only', default='all')
    ap.add_argument('--cpus', default='0,1')
    ap.add_argument('--have-ucx', type=int, default=0)
    ap.add_argument('--have-fi', type=int, default=0)
    ap.add_argument('--eps', default='1 16 256 1024')
    ap.add_argument('--fast-below', type=float, default=FAST_BELOW_NS)
    return ap.parse_args()


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ''


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith('{'):
            return json.loads(line)
    raise ValueError('no JSON line')


def parse_ucx(text, kind, size):
    """ucx_perftest -v: CSV, the last line is the whole run."""
    rows = [l for l in text.splitlines() if l[:1].isdigit() and l.count(',') >= 7]
    if not rows:
        raise ValueError('no result line')
    f = [float(x) for x in rows[-1].split(',')]
    iters, p50_us, avg_us, overall_us, _, _, _, overall_mr = f[:8]
    if kind == 'lat':
        # tag_lat reports half the round trip, like rdp-perf
        return {'lat_p50_ns': p50_us * 1000, 'lat_mean_ns': overall_us * 1000,
                'iterations': iters}
    return {'msg_rate': overall_mr, 'gbps': overall_mr * size * 8 / 1e9, 'iterations': iters}


def parse_fi(text):
    """fi_pingpong: 'bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec'."""
    rows = [l.split() for l in text.splitlines() if l[:1].isdigit()]
    if not rows:
        raise ValueError('no result line')
    r = rows[-1]
    # usec/xfer = run time / (2 x iterations): the mean one-way latency
    return {'lat_mean_ns': float(r[6]) * 1000, 'size': int(r[0])}


def parse_rdp(path):
    with open(path) as f:
        j = json.load(f)
    res = {}
    for r in j['results']:
        key = '%s%d' % (r['mode'], r['size'])
        d = {k: r[k] for k in ('msg_rate', 'gbps', 'lat_p50_ns', 'lat_p99_ns', 'lat_p999_ns',
                               'cpu_ns_per_msg', 'messages')}
        d['credit'] = r['credit']
        if r['mode'] != 'bw' and r['lat_p50_ns'] == 0:
            d['lat_p50_ns'] = None  # no latency sample was recorded
        if r['mode'] == 'lat' and r['msg_rate'] > 0:
            # mean one-way latency as fi_pingpong defines it: time / (2 x round trips)
            d['lat_mean_ns'] = 0.5e9 / r['msg_rate']
        res[key] = d
    return res


def load_runs(out):
    runs = []
    with open(os.path.join(out, 'index.tsv')) as f:
        for row in csv.DictReader(f, delimiter='\t'):
            row['round'] = int(row['round'])
            runs.append(row)
    return runs


def parse_run(out, run):
    base = os.path.join(out, 'raw', run['file'])
    text = read_text(base + '.out')
    tool, test = run['tool'], run['test']
    if tool in ('cacheline', 'spsc', 'ring', 'rings'):
        return last_json(text)
    if tool.startswith('rdp'):
        return parse_rdp(base + '.json')
    if tool == 'ucx':
        kind = 'lat' if test.startswith('lat') else 'bw'
        return parse_ucx(text, kind, int(''.join(c for c in test if c.isdigit())))
    if tool == 'fi':
        return parse_fi(text)
    raise ValueError('unknown tool ' + tool)


def med(v):
    return statistics.median(v) if v else None


def fmt(v, unit=''):
    if v is None:
        return '-'
    if unit == 'ns':
        return '%.0f ns' % v
    if unit == 'msg/s':
        return '%.2f M/s' % (v / 1e6)
    if unit == 'Gb/s':
        return '%.2f Gb/s' % v
    if unit == 'x':
        return '%.2fx' % v
    if unit == '%':
        return '%.1f %%' % (v * 100)
    return '%.3g' % v


def machine_info(args, rounds):
    info = {'cpus_used': args.cpus, 'nproc': os.cpu_count(), 'kernel': platform.release()}
    for line in read_text('/proc/cpuinfo').splitlines():
        if line.startswith('model name'):
            info['cpu_model'] = line.split(':', 1)[1].strip()
            break
    for cmd, key in ((['ucx_info', '-v'], 'ucx'), (['fi_info', '--version'], 'libfabric')):
        try:
            o = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
            info[key] = ' '.join(o.split('\n')[0].replace('#', '').split())
        except (OSError, subprocess.SubprocessError):
            info[key] = 'not installed'
    return info


def main():
    args = parse_args()
    out = args.out
    runs = load_runs(out)
    problems = []

    # ---- parse every run ----
    for run in runs:
        run['metrics'] = None
        if run['status'] != 'ok':
            continue
        try:
            run['metrics'] = parse_run(out, run)
        except (ValueError, KeyError, IndexError, OSError, json.JSONDecodeError) as e:
            problems.append('round %d %s %s: ran but gave no numbers (%s)' %
                            (run['round'], run['test'], run['tool'], e))

    nrounds = max([r['round'] for r in runs], default=0)
    by = {}  # (round, test, tool) -> metrics
    for run in runs:
        if run['metrics'] is not None:
            by[(run['round'], run['test'], run['tool'])] = run['metrics']

    def get(rnd, test, tool, *path):
        v = by.get((rnd, test, tool))
        for p in path:
            if v is None:
                return None
            v = v.get(p) if isinstance(v, dict) else None
        return v

    # ---- machine state per round ----
    rounds = []
    for rnd in range(1, nrounds + 1):
        probes = [get(rnd, 'state-' + w, 'cacheline', 'oneway_ns_p10') for w in ('start', 'end')]
        probes = [p for p in probes if p is not None]
        kinds = {'fast' if p < args.fast_below else 'slow' for p in probes}
        state = kinds.pop() if len(kinds) == 1 else ('mixed' if kinds else 'unknown')
        la = [read_text(os.path.join(out, 'raw', 'r%d-loadavg-%s.txt' % (rnd, w))).split()[:1]
              for w in ('start', 'end')]
        others = read_text(os.path.join(out, 'raw', 'r%d-others-running.txt' % rnd)).strip()
        rounds.append({'round': rnd, 'state': state, 'cacheline_ns': probes,
                       'loadavg_1min': [float(x[0]) for x in la if x],
                       'others_running': int(others) if others else None})

    # ---- machine state per run: the probes just before and after it ----
    def kind(ns):
        return 'fast' if ns < args.fast_below else 'slow'

    probes_in = {}  # round -> [(seq, p10)]
    for run in runs:
        p10 = (run['metrics'] or {}).get('oneway_ns_p10') if run['tool'] == 'cacheline' else None
        if p10 is not None:
            probes_in.setdefault(run['round'], []).append((int(run['seq']), p10))
    run_state = {}  # (round, test, tool) -> fast, slow, changed or unknown
    for run in runs:
        key = (run['round'], run['test'], run['tool'])
        if run['tool'] == 'cacheline':
            p10 = (run['metrics'] or {}).get('oneway_ns_p10')
            run_state[key] = run['state'] = kind(p10) if p10 is not None else 'unknown'
            continue
        ps = sorted(probes_in.get(run['round'], []))
        seq = int(run['seq'])
        before = [p for (q, p) in ps if q < seq]
        after = [p for (q, p) in ps if q > seq]
        if not before or not after:
            run_state[key] = 'unknown'
        else:
            k = {kind(before[-1]), kind(after[0])}
            run_state[key] = k.pop() if len(k) == 1 else 'changed'
        run['state'] = run_state[key]

    # ---- what is compared: (row, unit, better, [(label, test, tool, path)]) ----
    eps = [int(e) for e in args.eps.split()]

    def ring_label(e, w):
        """The rings probe's row: E rings, W units of work a message."""
        return 'limit: %d ring%s%s' % (e, 's' if e > 1 else '', ', work %d' % w if w else '')

    rows = [
        ('64 B latency p50, one-way', 'ns', 'low', [
            ('rdmaplane', 'lat64', 'rdp', ('lat64', 'lat_p50_ns')),
            ('UCX tag_lat', 'lat64', 'ucx', ('lat_p50_ns',)),
            ('limit: cache line', 'state-start', 'cacheline', ('oneway_ns_p50',))]),
        ('64 B latency mean, one-way', 'ns', 'low', [
            ('rdmaplane', 'lat64', 'rdp', ('lat64', 'lat_mean_ns')),
            ('UCX tag_lat', 'lat64', 'ucx', ('lat_mean_ns',)),
            ('libfabric fi_pingpong', 'lat64', 'fi', ('lat_mean_ns',))]),
        ('64 B message rate', 'msg/s', 'high', [
            ('rdmaplane', 'bw64', 'rdp', ('bw64', 'msg_rate')),
            ('UCX tag_bw', 'bw64', 'ucx', ('msg_rate',)),
            ('limit: SPSC ring', 'bw64', 'spsc', ('msg_rate',)),
            ('rdmaplane, default queues', 'bw64', 'rdp-default', ('bw64', 'msg_rate'))]),
        ('4 KiB message rate', 'msg/s', 'high', [
            ('rdmaplane', 'bw4096', 'rdp', ('bw4096', 'msg_rate')),
            ('UCX tag_bw', 'bw4096', 'ucx', ('msg_rate',)),
            ('limit: SPSC ring', 'bw4096', 'spsc', ('msg_rate',)),
            ('rdmaplane, default queues', 'bw4096', 'rdp-default', ('bw4096', 'msg_rate'))]),
        ('64 KiB bandwidth', 'Gb/s', 'high', [
            ('rdmaplane', 'bw65536', 'rdp', ('bw65536', 'gbps')),
            ('UCX tag_bw', 'bw65536', 'ucx', ('gbps',)),
            ('limit: SPSC ring', 'bw65536', 'spsc', ('gbps',))]),
        ('64 B rate, credits on (RQ = 4 SQ)', 'msg/s', 'high', [
            ('credits', 'credit', 'rdp', ('bw64', 'msg_rate')),
            ('bypassed', 'credit', 'rdp-nocredit', ('bw64', 'msg_rate'))]),
        ('4 KiB rate, credits on (RQ = 4 SQ)', 'msg/s', 'high', [
            ('credits', 'credit', 'rdp', ('bw4096', 'msg_rate')),
            ('bypassed', 'credit', 'rdp-nocredit', ('bw4096', 'msg_rate'))]),
        ('64 B rate by endpoints on one poller', 'msg/s', 'high', [
            ('%d ep' % e, 'eps%d' % e, 'rdp', ('bw64', 'msg_rate')) for e in eps] + [
            ('%d ep, 1 busy' % eps[-1], 'busy1', 'rdp', ('bw64', 'msg_rate'))] + [
            (ring_label(e, w), 'rings%d-w%d' % (e, w), 'rings', ('msg_rate',))
            for w in (0, 40) for e in sorted({1, eps[-1]})]),
        ('pipeline ring handoff (probe-ring)', 'ns', 'low', [
            ('one-way handoff p50', 'ring', 'ring', ('handoff_ns_p50',))]),
        ('pipeline ring stream (probe-ring)', 'msg/s', 'high', [
            ('handoffs/s', 'ring', 'ring', ('stream_rate',))]),
    ]
    # ratios computed inside each round: (name, row index, num label, den label, target)
    ratios = [
        ('latency p50: rdmaplane / UCX', 0, 'rdmaplane', 'UCX tag_lat', ('<=', 1.0)),
        ('latency p50: rdmaplane / cache-line limit', 0, 'rdmaplane', 'limit: cache line', None),
        ('latency mean: rdmaplane / libfabric', 1, 'rdmaplane', 'libfabric fi_pingpong', None),
        ('latency mean: rdmaplane / UCX', 1, 'rdmaplane', 'UCX tag_lat', None),
        ('64 B rate: rdmaplane / UCX', 2, 'rdmaplane', 'UCX tag_bw', ('>=', 1.0)),
        ('64 B rate: rdmaplane / SPSC limit', 2, 'rdmaplane', 'limit: SPSC ring', None),
        ('64 B rate: rdmaplane with default queues / UCX', 2, 'rdmaplane, default queues',
         'UCX tag_bw', None),
        ('4 KiB rate: rdmaplane / UCX', 3, 'rdmaplane', 'UCX tag_bw', None),
        ('4 KiB rate: rdmaplane / SPSC limit', 3, 'rdmaplane', 'limit: SPSC ring', None),
        ('64 KiB bandwidth: rdmaplane / UCX', 4, 'rdmaplane', 'UCX tag_bw', ('>=', 0.9)),
        ('64 KiB bandwidth: rdmaplane / SPSC limit', 4, 'rdmaplane', 'limit: SPSC ring', None),
        ('64 B rate: credits / bypassed', 5, 'credits', 'bypassed', ('>=', 0.97)),
        ('4 KiB rate: credits / bypassed', 6, 'credits', 'bypassed', None),
    ] + [('endpoints: %d / 1' % e, 7, '%d ep' % e, '1 ep', ('>=', 0.8) if e == 1024 else None)
         for e in eps if e != 1] + [
        ('endpoints: %d connected, 1 busy / 1' % eps[-1], 7, '%d ep, 1 busy' % eps[-1], '1 ep',
         None)] + [
        ('limit: %d rings / 1 ring%s' % (eps[-1], ', work %d a message' % w if w else ''), 7,
         ring_label(eps[-1], w), ring_label(1, w), None)
        for w in (0, 40) if eps[-1] != 1]

    def value(rnd, row, label):
        for (lab, test, tool, path) in rows[row][3]:
            if lab == label:
                return get(rnd, test, tool, *path)
        return None

    def state_at(rnd, row, label):
        for (lab, test, tool, _) in rows[row][3]:
            if lab == label:
                return run_state.get((rnd, test, tool), 'unknown')
        return 'unknown'

    states = [st for st in ('fast', 'slow') if st in run_state.values()] + ['all']

    def in_state(rnd, row, label, st):
        return st == 'all' or state_at(rnd, row, label) == st

    summary = {'values': {}, 'ratios': {}}
    all_rounds = range(1, nrounds + 1)
    for st in states:
        vals = {}
        for i, (title, unit, better, cols) in enumerate(rows):
            vals[title] = {}
            for (lab, _, _, _) in cols:
                v = [x for x in (value(r, i, lab) for r in all_rounds
                                 if in_state(r, i, lab, st)) if x is not None]
                vals[title][lab] = {'median': med(v), 'min': min(v) if v else None,
                                    'max': max(v) if v else None, 'n': len(v), 'unit': unit}
        summary['values'][st] = vals
        rat = {}
        for (name, row, num, den, target) in ratios:
            v = []
            for r in all_rounds:
                if not (in_state(r, row, num, st) and in_state(r, row, den, st)):
                    continue
                a, b = value(r, row, num), value(r, row, den)
                if a is not None and b:
                    v.append(a / b)
            m = med(v)
            verdict = None
            if target is not None and st == 'all':
                # a ratio of two runs in different states says nothing of the target
                verdict = 'per state only'
            elif target is not None and m is not None:
                verdict = 'met' if (m <= target[1] if target[0] == '<=' else m >= target[1]) \
                    else 'missed'
            rat[name] = {'median': m, 'min': min(v) if v else None, 'max': max(v) if v else None,
                         'n': len(v), 'target': None if target is None else
                         '%s %.2f' % target, 'verdict': verdict}
        summary['ratios'][st] = rat

    # ---- every expected run happened ----
    expected_tools = set()
    if args.only != 'peers':
        expected_tools |= {'rdp', 'rdp-nocredit', 'cacheline', 'spsc', 'ring', 'rings'}
    if args.only != 'ours':
        if args.have_ucx:
            expected_tools.add('ucx')
        if args.have_fi:
            expected_tools.add('fi')
    seen = {r['tool'] for r in runs if r['metrics'] is not None}
    for t in sorted(expected_tools - seen):
        problems.append('no result at all from %s' % t)
    failed = [r for r in runs if r['status'] == 'failed']
    retried = [r for r in runs if r['status'] == 'retried']

    # ---- print ----
    lines = []
    info = machine_info(args, rounds)
    lines.append('# devtools/bench: %s run, %d round(s)' % (args.mode, nrounds))
    lines.append('')
    lines.append('Machine: %s, %s CPUs (used: %s), kernel %s; UCX %s; %s.' % (
        info.get('cpu_model', '?'), info['nproc'], info['cpus_used'], info['kernel'],
        info['ucx'], info['libfabric']))
    lines.append('')
    lines.append('| round | state | cache line one-way p10 (start, end) | load average '
                 '(start, end) | other runnable tasks at start |')
    lines.append('|---|---|---|---|---|')
    for r in rounds:
        lines.append('| %d | %s | %s | %s | %s |' % (
            r['round'], r['state'], ', '.join('%.0f ns' % x for x in r['cacheline_ns']) or '-',
            ', '.join('%.1f' % x for x in r['loadavg_1min']),
            '-' if r['others_running'] is None else r['others_running']))
    lines.append('')
    counts = {}
    for run in runs:
        if run['tool'] != 'cacheline' and 'state' in run and run['metrics'] is not None:
            counts[run['state']] = counts.get(run['state'], 0) + 1
    lines.append('A probe is fast when its cache-line one-way time (10th percentile of its '
                 'batches) reads below %.0f ns, slow above; a round is mixed when its first and '
                 'last probes disagree. Every run is classified by the probes just before and '
                 'after it: %s. Ratios are taken inside each round; a state\'s medians use the '
                 'runs, and the ratios of two runs, that were in that state throughout '
                 '(min-max in brackets, n = how many).' % (
                     args.fast_below, ', '.join('%d %s' % (counts[k], k) for k in
                                                ('fast', 'slow', 'changed', 'unknown')
                                                if counts.get(k))))
    for st in states:
        lines.append('')
        lines.append('## %s' % ('all runs, whatever their state' if st == 'all'
                                 else 'runs in the %s state' % st))
        lines.append('')
        lines.append('| test | tool | median | min-max | n |')
        lines.append('|---|---|---|---|---|')
        for (title, unit, _, cols) in rows:
            for (lab, _, _, _) in cols:
                v = summary['values'][st][title][lab]
                if v['n'] == 0:
                    continue
                lines.append('| %s | %s | %s | %s - %s | %d |' % (
                    title, lab, fmt(v['median'], unit), fmt(v['min'], unit), fmt(v['max'], unit),
                    v['n']))
        lines.append('')
        lines.append('| ratio | median | min-max | n | target | verdict |')
        lines.append('|---|---|---|---|---|---|')
        for (name, _, _, _, _) in ratios:
            v = summary['ratios'][st][name]
            if v['n'] == 0:
                continue
            lines.append('| %s | %s | %s - %s | %d | %s | %s |' % (
                name, fmt(v['median'], 'x'), fmt(v['min'], 'x'), fmt(v['max'], 'x'), v['n'],
                v['target'] or '', v['verdict'] or ''))
    if failed or retried or problems or args.only != 'ours' and not (args.have_ucx and args.have_fi):
        lines.append('')
        lines.append('## Not measured')
        lines.append('')
        if args.only != 'ours' and not args.have_ucx:
            lines.append('- UCX: ucx_perftest is not installed (Debian package ucx-utils): skipped')
        if args.only != 'ours' and not args.have_fi:
            lines.append('- libfabric: fi_pingpong is not installed (libfabric-bin): skipped')
        seen_fail = set()
        for r in failed:
            key = (r['test'], r['tool'])
            if key in seen_fail:
                continue
            seen_fail.add(key)
            rs = [x['round'] for x in failed if (x['test'], x['tool']) == key]
            lines.append('- %s %s failed in round%s %s; first: %s' % (
                r['test'], r['tool'], 's' if len(rs) > 1 else '', ', '.join(map(str, rs)),
                r['note']))
        for r in retried:
            lines.append('- round %d %s %s failed once and was run again: %s' % (
                r['round'], r['test'], r['tool'], r['note']))
        for r in runs:
            if r['status'] == 'skipped' and r['round'] == 1:
                lines.append('- %s %s skipped: %s' % (r['test'], r['tool'], r['note']))
        for p in problems:
            lines.append('- ' + p)
    text = '\n'.join(lines) + '\n'
    print(text)
    with open(os.path.join(out, 'summary.md'), 'w') as f:
        f.write(text)
    doc = {'mode': args.mode, 'machine': info, 'rounds': rounds, 'fast_below_ns': args.fast_below,
           'summary': summary,
           'runs': [{k: r.get(k) for k in ('round', 'seq', 'test', 'tool', 'status', 'note',
                                           'state', 'metrics')} for r in runs]}
    with open(os.path.join(out, 'bench.json'), 'w') as f:
        json.dump(doc, f, indent=1)
    if problems:
        for p in problems:
            print('report.py: ' + p, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
