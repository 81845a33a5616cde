#!/usr/bin/env bash
# Same-state pairs: rdp-perf against UCX with every rdp-perf run bracketed
# by two UCX runs (UCX, rdmaplane, UCX), for the 64 B stream and the 64 B
# ping-pong (docs/performance.md, "Targets").
#
# This machine can change speed between one tool and the next, inside a
# round of run.sh. A pair counts only when its two UCX runs agree (within
# 15 %): the state did not change around the rdp-perf run. Pairs are then
# grouped by UCX's speed (the faster and the slower of the machine's
# states) and each group gets the median of its ratios.
#
#   devtools/bench/pairs.sh [--iterations N] [--duration S] [--cpus A,B]
#                           [--bin-dir DIR] [--json FILE] [--smoke]
#
# --bin-dir: a build tree with apps/rdp-perf (default: build-bench, built
# by run.sh). --smoke: one short iteration (the test command runs it).
# Exits 77 when ucx_perftest is not installed (devtools/deps.sh bench).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"
iterations=12
duration=0.5
bin_dir=$top/build-bench
cpus=
json=
bw_iters=4000000
lat_iters=500000
while [ $# -gt 0 ]; do
	case "$1" in
	--iterations) iterations=$2; shift ;;
	--duration) duration=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--bin-dir) bin_dir=$2; shift ;;
	--json) json=$2; shift ;;
	--smoke) iterations=1; duration=0.2; bw_iters=200000; lat_iters=20000 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "pairs.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
command -v ucx_perftest >/dev/null ||
	{ echo "pairs.sh: SKIP: ucx_perftest (Debian package ucx-utils) is not installed"; exit 77; }
rdp=$bin_dir/apps/rdp-perf/rdp-perf
[ -x "$rdp" ] || { echo "pairs.sh: $rdp is missing (build it, or run devtools/bench/run.sh)" >&2; exit 1; }
if [ -z "$cpus" ]; then
	cpus=$(bench_default_cpus)
fi
cpu_a=${cpus%,*}
cpu_b=${cpus#*,}
port=$((32000 + RANDOM % 2000))
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; true' EXIT

# ucx KIND ITERS: one ucx_perftest run, 64 B; prints ns (lat) or msg/s (bw)
ucx() {
	local kind=$1 iters=$2 v
	port=$((port + 1))
	UCX_TLS=sm,self taskset -c "$cpu_b" ucx_perftest -p "$port" -c "$cpu_b" >/dev/null 2>&1 &
	srv=$!
	bench_wait_listen "$port" "$srv" || true
	v=$(UCX_TLS=sm,self timeout 60 taskset -c "$cpu_a" ucx_perftest 127.0.0.1 -p "$port" \
		-c "$cpu_a" -t "tag_$kind" -s 64 -n "$iters" -w $((iters / 20 + 10)) 2>/dev/null |
		awk -v k="$kind" '/^Final/ { if (k == "lat") print $3 * 1000; else print $NF }') || true
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=
	echo "${v:-nan}"
}

# rdp MODE [ARGS...]: one rdp-perf loopback run, 64 B; prints p50 ns (lat) or msg/s (bw)
rdp() {
	local mode=$1; shift
	timeout 120 taskset -c "$cpu_a,$cpu_b" "$rdp" -- -q -m "$mode" -s 64 -d "$duration" "$@" \
		2>/dev/null | awk -v m="$mode" '$1 == m { print (m == "lat") ? $6 : $4 }' || true
}

[ -n "$json" ] && mkdir -p "$(dirname "$json")"
rows=()
for it in $(seq "$iterations"); do
	u1=$(ucx bw "$bw_iters")
	q=$(rdp bw -c "$here/stream.ini")
	d=$(rdp bw)
	u2=$(ucx bw "$bw_iters")
	rows+=("bw $it $u1 $u2 ${q:-nan} ${d:-nan}")
	u1=$(ucx lat "$lat_iters")
	l=$(rdp lat)
	u2=$(ucx lat "$lat_iters")
	rows+=("lat $it $u1 $u2 ${l:-nan} nan")
	echo "pairs.sh: iteration $it of $iterations: ${rows[-2]} | ${rows[-1]}" >&2
done

printf '%s\n' "${rows[@]}" | python3 "$here/pairs_report.py" ${json:+--json "$json"}
