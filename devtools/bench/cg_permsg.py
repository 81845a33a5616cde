#!/usr/bin/env python3
"""Instructions per message on the poller thread, from a callgrind profile.

    cg_permsg.py CALLGRIND_OUT --per FUNCTION|json:RDP_PERF_JSON [--json FILE]

Takes the thread file that runs rdp_poller_run (callgrind
--separate-threads=yes writes one per thread), divides the inclusive and
self instruction counts of the hot-path functions by the number of calls to
FUNCTION (one per message, e.g. rdp_msg_free on rdp-perf's server), or
by the "messages_completed" of the run's rdp-perf --json file (the client
sends in bursts, so no function of its runs once per message),
and counts calls that the hot path must not make (allocation, locks,
system calls).

    cg_permsg.py CALLGRIND_OUT --per ... --against OTHER_OUT [--against-per ...]

adds every function's self instructions a message in both profiles and the
difference, largest first: what one build or configuration runs that the
other does not (e.g. a ping-pong client with a shared receive queue against
one with a receive queue of its own). Functions that run once a poll
differ with the polls a message, which both profiles print.

    cg_permsg.py --self-test
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HOT = ['rdp_poller_poll', 'poll_cq', 'shm_poll_cq', 'take_qps', 'take_local', 'rq_reap',
       'ep_complete', 'recv_complete', 'send_complete', 'ep_progress', 'post_recvs',
       'shm_post_recv', 'post_sends', 'shm_post_send', 'sq_run', 'deliver', 'ep_inbox',
       'rdp_msg_alloc', 'rdp_msg_alloc_bulk', 'rdp_pool_alloc_msg', 'rdp_msg_free',
       'rdp_msg_free_bulk', 'rdp_pool_put_chain',
       'rdp_ep_send_burst', 'rdp_poller_is_self', 'rte_ring_sc_dequeue_burst',
       'fill', 'c_on_send', 'c_on_recv', 's_on_recv', 's_on_send', 'client_received',
       '__memcpy_avx_unaligned_erms', '__memmove_avx_unaligned_erms',
       '__memmove_avx512_unaligned_erms']
# what a hot path must not call (callgrind names; syscall wrappers vary)
FORBIDDEN = re.compile(r'^(malloc|calloc|realloc|free|pthread_mutex_lock|pthread_spin_lock|'
                       r'__lll_lock_wait|syscall|__GI___(libc_)?(read|write|sendmsg|recvmsg|'
                       r'clock_nanosleep|nanosleep|ioctl|poll|epoll_wait|futex)|'
                       r'__libc_(read|write|sendmsg|recvmsg)|clock_gettime|__clock_gettime|'
                       r'sched_yield|usleep|__futex_abstimed_wait_common.*)$')


def thread_files(path):
    """(the poller thread's file: the thread that polls most, every thread's file)."""
    files = sorted(glob.glob(path + '-*')) or [path]
    polls = {f: calls_by_callee(f).get('rdp_poller_poll', 0) for f in files}
    best = max(files, key=lambda f: polls[f])
    if polls[best] == 0:
        sys.exit('cg_permsg: no thread of %s polls (rdp_poller_poll)' % path)
    return best, files


def calls_by_callee(path):
    """Sum the calls= counts per callee name (names are compressed as (id))."""
    names, calls = {}, {}
    callee = None
    with open(path, errors='replace') as fh:
        for line in fh:
            m = re.match(r'^c?fn=\((\d+)\)(?: (.*))?$', line.rstrip('\n'))
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                if line.startswith('cfn='):
                    callee = names.get(m.group(1))
                continue
            if line.startswith('calls=') and callee is not None:
                n = int(line.split()[0].split('=')[1])
                calls[callee] = calls.get(callee, 0) + n
                callee = None
    return calls


def annotate(path, inclusive):
    out = subprocess.run(['callgrind_annotate', '--inclusive=' + ('yes' if inclusive else 'no'),
                          '--threshold=100', path], capture_output=True, text=True).stdout
    cost = {}
    for line in out.splitlines():
        m = re.match(r'^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*?):(\S+)(?: \[.*\])?$', line)
        if m:
            name = m.group(3)
            cost[name] = cost.get(name, 0) + int(m.group(1).replace(',', ''))
    return cost


def messages(per, files):
    """Messages of a run: calls to @per in any thread (pipeline mode sends
    from the main lcore), or json:FILE, an rdp-perf --json report."""
    if per.startswith('json:'):
        with open(per[5:]) as fh:
            msgs = json.load(fh).get('messages_completed', 0)
    else:
        msgs = sum(calls_by_callee(x).get(per, 0) for x in files)
    if msgs == 0:
        sys.exit('cg_permsg: no message counted by %s' % per)
    return msgs


def diff_rows(a, b, top):
    """(function, a, b, b - a) for the @top functions whose costs a message
    differ most, from two {function: instructions a message}."""
    rows = [(fn, a.get(fn, 0.0), b.get(fn, 0.0), b.get(fn, 0.0) - a.get(fn, 0.0))
            for fn in set(a) | set(b)]
    rows.sort(key=lambda r: (-abs(r[3]), r[0]))
    return rows[:top]


def against(a, msgs, polls, self_):
    """Print the self instructions a message of every function, here and in
    the --against profile, and their difference."""
    g, other_files = thread_files(a.against)
    other_msgs = messages(a.against_per or a.per, other_files)
    other_polls = calls_by_callee(g).get('rdp_poller_poll', 0)
    here = {fn: v / msgs for fn, v in self_.items()}
    there = {fn: v / other_msgs for fn, v in annotate(g, False).items()}
    print('self instructions a message: %s (%.2f polls a message) against %s (%.2f)' %
          (a.out, polls / msgs, a.against, other_polls / other_msgs))
    print('  %-40s %10s %10s %10s' % ('function', 'this', 'against', 'against-this'))
    for fn, x, y, d in diff_rows(here, there, a.top):
        print('  %-40s %10.1f %10.1f %+10.1f' % (fn[:40], x, y, d))


def self_test():
    """diff_rows() on made-up profiles with known differences."""
    a = {'reap': 135.0, 'poll': 80.0, 'post_recv': 159.0, 'same': 10.0}
    b = {'reap': 251.0, 'poll': 70.0, 'srq_complete': 74.0, 'same': 10.0}
    rows = diff_rows(a, b, 10)
    checks = [
        ([r[0] for r in rows] == ['post_recv', 'reap', 'srq_complete', 'poll', 'same'],
         'order %s' % [r[0] for r in rows]),
        (rows[0][1:] == (159.0, 0.0, -159.0), 'a function of one profile only: %s' % (rows[0],)),
        (rows[1][3] == 116.0, 'reap differs by %s, expected 116' % rows[1][3]),
        (len(diff_rows(a, b, 2)) == 2, 'top 2 kept %d rows' % len(diff_rows(a, b, 2))),
    ]
    # the poller thread is the one that polls, not the first whose file names
    # rdp_poller_run (the main thread's may, for a call that returned at once)
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, 'cg')
        for suffix, polls in (('-01', 3), ('-02', 5000)):
            with open(base + suffix, 'w') as fh:
                fh.write('fn=(1) rdp_poller_run\n0 5\ncfn=(2) rdp_poller_poll\n'
                         'calls=%d 0\n0 10\n' % polls)
        picked = os.path.basename(thread_files(base)[0])
    checks.append((picked == 'cg-02', 'picked the thread file %s, expected cg-02' % picked))
    failed = [why for ok, why in checks if not ok]
    for why in failed:
        print('cg_permsg.py self-test: ' + why)
    print('cg_permsg.py self-test: %d of %d checks passed' % (len(checks) - len(failed),
                                                               len(checks)))
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--per', required=True)
    ap.add_argument('--json')
    ap.add_argument('--label', default='')
    ap.add_argument('--against', help='another profile: every function, both, the difference')
    ap.add_argument('--against-per', help="its --per (default: this one's)")
    ap.add_argument('--top', type=int, default=30, help='rows of the --against table')
    a = ap.parse_args()
    f, files = thread_files(a.out)
    calls = calls_by_callee(f)
    incl, self_ = annotate(f, True), annotate(f, False)
    msgs = messages(a.per, files)
    total = incl.get('rdp_poller_run', 0)
    # the application lcore of pipeline mode: rdp-perf's event pump
    app = sum(annotate(x, True).get('pump_events', 0) for x in files if x != f)
    polls = calls.get('rdp_poller_poll', 0)
    rows = []
    for fn in HOT:
        if fn in incl or fn in self_:
            rows.append({'function': fn, 'calls_per_msg': calls.get(fn, 0) / msgs,
                         'incl_per_msg': incl.get(fn, 0) / msgs,
                         'self_per_msg': self_.get(fn, 0) / msgs})
    bad = {k: v for k, v in calls.items() if FORBIDDEN.match(k)}
    # the endpoint layer's work, polling excluded: completions, progress
    # (receives reposted, sends posted, events delivered) and the inbox
    work = sum(incl.get(fn, 0) for fn in ('ep_complete', 'ep_progress', 'ep_inbox'))
    doc = {'label': a.label, 'thread_file': f, 'messages': msgs, 'polls': polls,
           'poller_ir_per_msg': total / msgs, 'polls_per_msg': polls / msgs,
           'app_lcore_ir_per_msg': app / msgs, 'endpoint_work_ir_per_msg': work / msgs,
           'functions': rows, 'forbidden_calls_on_poller': bad}
    print('%s: %d messages, %.0f instructions per message on the poller thread, '
          '%.2f polls per message' % (a.label or f, msgs, total / msgs, polls / msgs))
    print('  endpoint work (ep_complete + ep_progress + ep_inbox): %.0f instructions per message'
          % (work / msgs))
    if app:
        print('  plus %.0f instructions per message on the application lcore (pump_events)' %
              (app / msgs))
    print('  %-34s %10s %12s %12s' % ('function', 'calls/msg', 'incl Ir/msg', 'self Ir/msg'))
    for r in rows:
        print('  %-34s %10.2f %12.1f %12.1f' % (r['function'], r['calls_per_msg'],
                                                r['incl_per_msg'], r['self_per_msg']))
    print('  calls the hot path must not make, whole thread (setup included): %s' %
          (', '.join('%s x%d' % kv for kv in sorted(bad.items())) or 'none'))
    if a.against:
        against(a, msgs, polls, self_)
    if a.json:
        with open(a.json, 'w') as fh:
            json.dump(doc, fh, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
