#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The man pages (meson test man_pages_render_and_name_every_option, suite unit).

Renders every page of man/ with man(1) (groff when man is missing) and
fails on any renderer warning, a missing NAME line or a missing section,
and, so that the pages cannot drift from the code, on any option that a
program's --help defines but its page has no item (.TP) for, and any
configuration key
(`rdp-config check` of an empty file prints them all) or public header
that librdmaplane(7) does not name. Exit 77 (skipped) when neither man nor
groff is installed (devtools/deps.sh test installs man-db and groff-base).

Usage: test_man.py MANDIR HEADERDIR... --perf BIN --blk BIN --config BIN
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

parser = argparse.ArgumentParser()
parser.add_argument("mandir")
parser.add_argument("headerdirs", nargs="*")
parser.add_argument("--perf", required=True)
parser.add_argument("--blk", required=True)
parser.add_argument("--config", required=True)
args = parser.parse_args()

man = shutil.which("man")
groff = shutil.which("groff")
if man is None and groff is None:
    print("SKIP: neither man nor groff is installed (devtools/deps.sh test installs "
          "man-db and groff-base)")
    sys.exit(SKIP)

# plain ASCII, one line per paragraph, no hyphenation: options stay whole
env = dict(os.environ, LC_ALL="C", MANWIDTH="1000", MANROFFOPT="-rHY=0", MAN_KEEP_FORMATTING="")
env.pop("MANPAGER", None)
env.pop("PAGER", None)


def render(page):
    """The page as text, and what the renderer said on stderr."""
    if man is not None:
        cmd = [man, "--warnings=all", "-l", page]
    else:
        cmd = [groff, "-man", "-wall", "-Tascii", "-rHY=0", "-rLL=1000n",
               "-P-c", "-P-b", "-P-u", "-P-o", page]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    warn = r.stderr
    if groff is not None:
        # groff's own check, without man's preprocessing
        g = subprocess.run([groff, "-man", "-ww", "-z", page], env=env,
                           capture_output=True, text=True)
        warn += g.stderr
        if g.returncode != 0:
            warn += f"groff exited {g.returncode}\n"
    if r.returncode != 0:
        warn += f"{cmd[0]} exited {r.returncode}\n"
    return r.stdout, warn


def help_text(cmd):
    r = subprocess.run(cmd, env=dict(os.environ, LC_ALL="C"), capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {r.returncode}: {r.stderr}")
    return r.stdout


OPT = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def options(text):
    """The options a --help defines: its lines "  -x, --long ARG  what"; a
    help without such lines (a one-line usage), every option it names."""
    defs = set()
    for l in text.splitlines():
        m = re.match(r"^  (?:(-[a-zA-Z]), )?(--?[a-zA-Z][\w-]*)", l)
        if m:
            defs.update(g for g in m.groups() if g)
    return sorted(defs if defs else set(OPT.findall(text)))


def tags(lines):
    """Options the page describes: those on the tag line of an item (.TP),
    rendered at the indentation of a section's body."""
    found = set()
    for l in lines:
        if re.match(r"^ {7}-", l):
            found.update(OPT.findall(l.split("  ", 1)[0] if "  " in l.strip() else l))
    return found


helps = {
    "rdp-perf.1": [[args.perf, "--", "--help"]],
    "rdp-blk.1": [[args.blk, "--help"], [args.blk, "--", "serve", "--help"],
                  [args.blk, "--", "load", "--help"]],
    "rdp-config.1": [[args.config, "--help"]],
    "librdmaplane.7": [],
}
sections = {
    "1": ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS|SERVE OPTIONS", "EXIT STATUS",
          "EXAMPLES", "SEE ALSO"],
    "7": ["NAME", "SYNOPSIS", "DESCRIPTION", "OBJECT MODEL", "CONFIGURATION", "ERRORS",
          "CONCURRENCY", "TELEMETRY", "FILES", "SEE ALSO"],
}

pages = sorted(glob.glob(os.path.join(args.mandir, "*.[1-8]")))
names = sorted(os.path.basename(p) for p in pages)
failures = []
if names != sorted(helps):
    failures.append(f"man/ holds {names}, expected {sorted(helps)}")

for page in pages:
    base = os.path.basename(page)
    name, sect = base.rsplit(".", 1)
    text, warn = render(page)
    if warn.strip():
        failures.append(f"{base}: the renderer warns:\n{warn.rstrip()}")
    lines = [l.rstrip() for l in text.splitlines()]
    heads = {l for l in lines if l and not l[0].isspace()}
    for want in sections.get(sect, ["NAME"]):
        if not any(h in heads for h in want.split("|")):
            failures.append(f"{base}: no {want} section")
    if "NAME" in heads:
        i = lines.index("NAME")
        body = next((l.strip() for l in lines[i + 1:] if l.strip()), "")
        if not body.startswith(name + " - "):
            failures.append(f"{base}: NAME reads '{body}', expected '{name} - ...'")
    words = set(re.findall(r"[\w/-]+(?:\.[\w/-]+)*", text))
    described = tags(lines)
    for cmd in helps.get(base, []):
        for o in options(help_text(cmd)):
            if o not in described:
                failures.append(f"{base}: {' '.join(cmd[1:])} lists {o}, the page has no "
                                f"item for it")
    if base == "librdmaplane.7":
        with tempfile.NamedTemporaryFile("w", suffix=".ini") as empty:
            dump = subprocess.run([args.config, "check", empty.name], capture_output=True,
                                  text=True, env=dict(os.environ, LC_ALL="C"))
        keys = re.findall(r"^(\w+)\s+=", dump.stdout, re.M)
        if dump.returncode != 0 or len(keys) < 10:
            failures.append(f"rdp-config check of an empty file: {dump.stderr}")
        for k in sorted(set(keys)):
            if k not in words:
                failures.append(f"{base}: configuration key {k} is not named")
        for d in args.headerdirs:
            for h in sorted(glob.glob(os.path.join(d, "rdp_*.h"))):
                if os.path.basename(h) not in words:
                    failures.append(f"{base}: public header {os.path.basename(h)} is not named")
    print(f"{base}: rendered, {len(lines)} lines")

if failures:
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1)
print(f"ok: {len(pages)} pages render without warnings and name every option")
