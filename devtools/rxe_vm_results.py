#!/usr/bin/env python3
"""Turn the rxe lane's serial console into meson-style JSON test results.

Usage: rxe_vm_results.py CONSOLE RESULTS QEMU_STATUS

The guest marks its progress with lines starting "@@rxe":
  @@rxe boot T | setup-ok T | setup-failed REASON
  @@rxe begin NAME T ... @@rxe end NAME STATUS T ... @@rxe done T
A command that runs `rdp-test --suite` yields one result per test, read from
its "ok/not ok/skip N - NAME" lines, with that test's output; any other
command yields one result from its exit status (0 OK, 77 SKIP, else FAIL).
A command that never ended, and a guest that never finished, fail.

Writes one JSON object per line (name, result, duration, returncode,
stdout), prints the counts and exits 1 when anything failed. The last
lines of each failure's output are printed again after the list, so that a
log read from its end shows why.
"""
import json
import re
import sys

TEST_START = re.compile(r'^# (\S+)/(\S+)$')
TEST_RESULT = re.compile(r'^(ok|not ok|skip) \d+ - (\S+) \(([\d.]+) s\)$')
RESULT_OF = {'ok': 'OK', 'not ok': 'FAIL', 'skip': 'SKIP'}
TAIL = 60
FAILED_TAIL = 30


def tail(lines, n=TAIL):
    return '\n'.join(lines[-n:])


def command_results(name, lines, status):
    """Results of one command from its output lines and exit status."""
    out = []
    current, buf = None, []
    for line in lines:
        m = TEST_START.match(line)
        if m:
            current, buf = m.group(2), [line]
            continue
        m = TEST_RESULT.match(line)
        if m and current == m.group(2):
            buf.append(line)
            out.append({'name': f'rxe-vm / {name} / {current}',
                        'result': RESULT_OF[m.group(1)],
                        'duration': float(m.group(3)),
                        'stdout': '\n'.join(buf)})
            current, buf = None, []
            continue
        buf.append(line)
    if current is not None:
        why = 'timed out' if status in (124, 143, 137) else 'did not finish'
        if status is None:
            why = 'the guest stopped during it'
        out.append({'name': f'rxe-vm / {name} / {current}', 'result': 'FAIL',
                    'stdout': '\n'.join(buf) + f'\n[rxe-vm] test {why}'})
    if not out:
        result = 'OK' if status == 0 else 'SKIP' if status == 77 else 'FAIL'
        out.append({'name': f'rxe-vm / {name}', 'result': result,
                    'returncode': status, 'stdout': tail(lines)})
    elif status is None or (status != 0 and all(r['result'] != 'FAIL' for r in out)):
        out.append({'name': f'rxe-vm / {name} (exit status)', 'result': 'FAIL',
                    'returncode': status, 'stdout': tail(lines)})
    return out


def parse(console_lines, qemu_status):
    results = []
    setup = None
    done = False
    cmd, cmd_lines, preamble = None, [], []
    for line in console_lines:
        if not line.startswith('@@rxe '):
            (cmd_lines if cmd else preamble).append(line)
            continue
        word = line.split()
        if word[1] == 'setup-ok':
            setup = 'ok'
            results.append({'name': 'rxe-vm / soft-roce rxe0+rxe1 up', 'result': 'OK',
                            'duration': float(word[2]), 'stdout': tail(preamble)})
        elif word[1] == 'setup-failed':
            setup = 'failed'
            preamble.append(line)
        elif word[1] == 'begin':
            cmd, cmd_lines = word[2], []
        elif word[1] == 'end' and cmd == word[2]:
            results += command_results(cmd, cmd_lines, int(word[3]))
            cmd = None
        elif word[1] == 'done':
            done = True
    if cmd is not None:
        results += command_results(cmd, cmd_lines, None)
    if setup != 'ok':
        results.append({'name': 'rxe-vm / soft-roce rxe0+rxe1 up', 'result': 'FAIL',
                        'stdout': tail(preamble + console_lines[-20:])})
    elif not done:
        why = 'hit the lane deadline' if qemu_status == 124 else f'exited with {qemu_status}'
        results.append({'name': 'rxe-vm / guest finished', 'result': 'FAIL',
                        'stdout': f'qemu {why} before the guest said done'})
    return results


def main():
    console, out_path, qemu_status = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(console, errors='replace') as f:
        lines = f.read().splitlines()
    results = parse(lines, qemu_status)
    with open(out_path, 'w') as f:
        for r in results:
            f.write(json.dumps(r) + '\n')
    counts = {k: sum(r['result'] == k for r in results) for k in ('OK', 'FAIL', 'SKIP')}
    for r in results:
        print(f"rxe-vm: {r['result']:4} {r['name']}")
    for r in results:
        if r['result'] == 'FAIL':
            print(f"rxe-vm: --- {r['name']} (exit status {r.get('returncode')}), last lines:")
            for line in r['stdout'].splitlines()[-FAILED_TAIL:]:
                print(f"rxe-vm: | {line}")
    print(f"rxe-vm: {counts['OK']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
          f"-> {out_path}")
    sys.exit(1 if counts['FAIL'] else 0)


if __name__ == '__main__':
    main()
