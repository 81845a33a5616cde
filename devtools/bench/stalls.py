#!/usr/bin/env python3
"""Nanoseconds per message by side, function and source line, from stalls.sh.

    stalls.py PREFIX[,PREFIX...] [OTHER[,OTHER...]] [--top N]

Each PREFIX names a stalls.sh run (PREFIX.txt, .json, .meta). The runs of a
set are averaged. With one set it prints where each side spends its time;
with two, both and the difference (OTHER minus PREFIX), largest first.

The sides are told apart by rdp-perf's own functions: the process with
samples in the client's (c_on_*, fill...) is the client, the one with the
server's (s_on_*...) the server; when only one side has such samples, the
other process is the other side. A sample is 1/freq s of one CPU, so a side's total is
its CPU's time per message, idle polls included.
"""
import collections
import json
import sys

# rdp-perf's own functions, by the side that runs them
SIDES = {
    'client': {'c_on_recv', 'c_on_send', 'client_sent', 'client_received', 'fill'},
    'server': {'s_on_recv', 's_on_send', 'run_server'},
}

def load(prefix):
    meta = json.load(open(prefix + '.meta'))
    msgs = json.load(open(prefix + '.json'))['results'][0]['messages']
    ns_per_sample = 1e9 / meta['freq']
    rows = []
    owner = {}
    for line in open(prefix + '.txt'):
        f = [x.strip() for x in line.split('|')]
        if len(f) < 5 or not f[1].isdigit():
            continue
        pid = f[2].split(':')[0]
        sym = f[3].replace('[.] ', '').replace('[k] ', 'kernel:')
        rows.append((pid, sym, f[4], int(f[1])))
        for side, marks in SIDES.items():
            if sym in marks:
                owner.setdefault(pid, side)
    pids = set(r[0] for r in rows)
    if len(set(owner.values())) == 1 and len(pids) == 2:
        # one side named itself: the other process is the other side
        (other,) = pids - set(owner)
        owner[other] = 'server' if 'client' in owner.values() else 'client'
    if sorted(set(owner.values())) != ['client', 'server'] or len(owner) != 2:
        sys.exit(f'stalls.py: {prefix}.txt: cannot tell client from server '
                 f'(processes {sorted(pids)}, named {owner})')
    out = collections.defaultdict(float)
    for pid, sym, src, n in rows:
        if pid in owner:
            out[(owner[pid], sym, src)] += n * ns_per_sample / msgs
    return out


def average(spec):
    names = spec.split(',')
    total = collections.defaultdict(float)
    for name in names:
        for k, v in load(name).items():
            total[k] += v / len(names)
    return total


def table(title, keys, a, b, top):
    print(title)
    order = sorted(keys, key=lambda k: -max(a.get(k, 0), b.get(k, 0) if b else 0))[:top]
    for k in order:
        label = ' '.join(k) if isinstance(k, tuple) else k
        if b is None:
            print(f'  {label[:64]:64s} {a.get(k, 0):7.1f}')
        else:
            print(f'  {label[:64]:64s} {a.get(k, 0):7.1f} {b.get(k, 0):7.1f} '
                  f'{b.get(k, 0) - a.get(k, 0):+7.1f}')


def main(argv):
    top = 14
    if '--top' in argv:
        i = argv.index('--top')
        top = int(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) not in (1, 2):
        sys.exit(__doc__)
    a = average(argv[0])
    b = average(argv[1]) if len(argv) == 2 else None
    for side in ('server', 'client'):
        def by(level, rows):
            out = collections.defaultdict(float)
            for (s, sym, src), v in rows.items():
                if s == side:
                    out[sym if level == 'fn' else (sym, src)] += v
            return out
        fa, fb = by('fn', a), by('fn', b) if b else None
        la, lb = by('line', a), by('line', b) if b else None
        head = f'== {side}: {sum(fa.values()):.1f} ns/msg'
        if b:
            head += f' -> {sum(fb.values()):.1f}'
        table(head + ', by function', set(fa) | set(fb or {}), fa, fb, top)
        table('   by line', set(la) | set(lb or {}), la, lb, top)


if __name__ == '__main__':
    main(sys.argv[1:])
