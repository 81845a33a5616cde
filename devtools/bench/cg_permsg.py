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
"""
import argparse
import glob
import json
import re
import subprocess
import sys

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
    """(the poller thread's file, every thread's file)."""
    files = sorted(glob.glob(path + '-*')) or [path]
    for f in files:
        with open(f, errors='replace') as fh:
            if 'fn=' in fh.read() and 'rdp_poller_run' in open(f, errors='replace').read():
                return f, files
    sys.exit('cg_permsg: no thread of %s runs rdp_poller_run' % path)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--per', required=True)
    ap.add_argument('--json')
    ap.add_argument('--label', default='')
    a = ap.parse_args()
    f, files = thread_files(a.out)
    calls = calls_by_callee(f)
    incl, self_ = annotate(f, True), annotate(f, False)
    # messages: calls to --per in any thread (pipeline mode sends from the main lcore)
    if a.per.startswith('json:'):
        with open(a.per[5:]) as fh:
            msgs = json.load(fh).get('messages_completed', 0)
    else:
        msgs = sum(calls_by_callee(x).get(a.per, 0) for x in files)
    if msgs == 0:
        sys.exit('cg_permsg: no message counted by %s' % a.per)
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
    if a.json:
        with open(a.json, 'w') as fh:
            json.dump(doc, fh, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
