#!/usr/bin/env bash
# One-sided transfers on shm against UCX's shared-memory put and get and
# against one core's memcpy, in same-state pairs (docs/performance.md,
# "Targets" and "One-sided transfers on shm"):
#   - rdp-perf -m write against ucx_perftest -t ucp_put_bw, and -m read
#     against -t ucp_get, at 64 KiB and 1 MiB (bandwidth), and -m write
#     against ucp_put_bw at 4 KiB (operations per second);
#   - rdp-perf -m write and -m read at 1 MiB against probe-memcpy at 1 MiB.
# Every rdp-perf run is bracketed by two runs of what it is compared with
# (UCX, rdmaplane, UCX); a pair counts only when its brackets agree within
# 15 % (the machine did not change state around it), and each comparison
# gets the median of its pairs' ratios. UCX runs as a server and a client
# process on localhost with UCX_TLS=sm,self, each pinned to one CPU;
# rdp-perf runs its loopback client and server on the same two CPUs.
#
#   devtools/bench/onesided.sh [--iterations N] [--duration S] [--cpus A,B]
#                              [--bin-dir DIR] [--huge N] [--smoke]
#
# --huge N: reserve N 2 MiB hugepages for the run (root; the count before is
# put back at the end) and run rdp-perf on them (EAL --in-memory: its
# regions then sit on hugepages, the production setting of the README);
# UCX runs with the same pages free, and takes what it takes of them.
# --bin-dir: a build tree with apps/rdp-perf and devtools/bench/probe-memcpy
# (default: build-bench, built by run.sh). --smoke: one short iteration.
# Exits 77 when ucx_perftest is not installed (devtools/deps.sh bench).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"
iterations=3
duration=1
bin_dir=$top/build-bench
cpus=
huge=0
while [ $# -gt 0 ]; do
	case "$1" in
	--iterations) iterations=$2; shift ;;
	--duration) duration=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--bin-dir) bin_dir=$2; shift ;;
	--huge) huge=$2; shift ;;
	--smoke) iterations=1; duration=0.2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "onesided.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
command -v ucx_perftest >/dev/null ||
	{ echo "onesided.sh: SKIP: ucx_perftest (Debian package ucx-utils) is not installed"; exit 77; }
rdp=$bin_dir/apps/rdp-perf/rdp-perf
probe=$bin_dir/devtools/bench/probe-memcpy
for b in "$rdp" "$probe"; do
	[ -x "$b" ] || { echo "onesided.sh: $b is missing (build it, or run devtools/bench/run.sh)" >&2; exit 1; }
done
if [ -z "$cpus" ]; then
	cpus=$(bench_default_cpus)
fi
cpu_a=${cpus%,*}
cpu_b=${cpus#*,}
port=$((34000 + RANDOM % 2000))
srv=
nr_huge=/proc/sys/vm/nr_hugepages
huge_before=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; [ -n "$huge_before" ] && echo "$huge_before" >"$nr_huge"; true' EXIT
eal=()
if [ "$huge" != 0 ]; then
	huge_before=$(cat "$nr_huge")
	echo "$huge" >"$nr_huge" 2>/dev/null ||
		{ echo "onesided.sh: cannot reserve $huge hugepages (root?)" >&2; huge_before=; exit 1; }
	[ "$(cat "$nr_huge")" -ge "$huge" ] ||
		{ echo "onesided.sh: only $(cat "$nr_huge") of $huge hugepages reserved" >&2; exit 1; }
	# the client's poller on the first CPU, the loopback server's on the second
	eal=(--lcores "0@$cpu_b,1@$cpu_a" --no-pci --in-memory --log-level=lib.eal:error)
fi

# ucx TEST SIZE: one ucx_perftest run of about $duration s; prints operations/s
ucx() {
	local test=$1 size=$2 iters v
	# about 3 M operations/s at 4 KiB and 30 GB/s above it on the hosts measured so far
	iters=$(awk -v d="$duration" -v s="$size" 'BEGIN { n = d * 30e9 / s; if (n > d * 3e6) n = d * 3e6;
		if (n < 1000) n = 1000; printf "%d", n }')
	port=$((port + 1))
	UCX_TLS=sm,self taskset -c "$cpu_b" ucx_perftest -p "$port" -c "$cpu_b" >/dev/null 2>&1 &
	srv=$!
	bench_wait_listen "$port" "$srv" || true
	v=$(UCX_TLS=sm,self timeout 60 taskset -c "$cpu_a" ucx_perftest 127.0.0.1 -p "$port" \
		-c "$cpu_a" -t "$test" -s "$size" -n "$iters" -w $((iters / 20 + 10)) 2>/dev/null |
		awk '/^Final/ { print $NF }') || true
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=
	echo "${v:-nan}"
}

# rdp MODE SIZE: one rdp-perf loopback run; prints operations/s
rdp() {
	timeout 120 taskset -c "$cpu_a,$cpu_b" "$rdp" "${eal[@]}" -- -q -m "$1" -s "$2" -d "$duration" \
		2>/dev/null | awk -v m="$1" '$1 == m { print $4 }' || true
}

# mcp SIZE: one core's memcpy of SIZE bytes; prints copies/s
mcp() {
	"$probe" --cpu "$cpu_a" --size "$1" --duration "$duration" 2>/dev/null |
		python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["bytes_per_s"] / r["size"])' ||
		echo nan
}

# pair NAME SIZE REF_CMD... -- MODE: REF, rdp-perf MODE, REF; one row
rows=()
pair() {
	local name=$1 size=$2 mode r1 r2 v
	shift 2
	local ref=()
	while [ "$1" != -- ]; do ref+=("$1"); shift; done
	mode=$2
	r1=$("${ref[@]}" "$size")
	v=$(rdp "$mode" "$size")
	r2=$("${ref[@]}" "$size")
	rows+=("$name $size ${r1:-nan} ${r2:-nan} ${v:-nan}")
	echo "onesided.sh: iteration $it of $iterations: ${rows[-1]}" >&2
}

for it in $(seq "$iterations"); do
	for size in 65536 1048576; do
		pair write_vs_ucp_put_bw "$size" ucx ucp_put_bw -- write
		pair read_vs_ucp_get "$size" ucx ucp_get -- read
	done
	pair write_ops_vs_ucp_put_bw 4096 ucx ucp_put_bw -- write
	pair write_vs_memcpy 1048576 mcp -- write
	pair read_vs_memcpy 1048576 mcp -- read
done

printf '%s\n' "${rows[@]}" | python3 "$here/bracket_report.py"
