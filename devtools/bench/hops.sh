#!/usr/bin/env bash
# Where one hop of a 64 B ping-pong spends its time (docs/performance.md,
# "Where the time goes"), from TSC stamps at each stage of the message.
#
# Builds the benchmark-only -Dhop_trace=true tree (lib/common/private/rdp_hop.h),
# runs an rdp-perf ping-pong on shm with the server and the client pinned to
# CPUs of their own, each process writing its stamps at exit, and prints
# the stages' medians (hops.py): the transfer from one side's publication of
# an entry to the other side finding it, then the receiver's stages up to
# its reply's publication. The stamps make the hop slower than an untraced
# one; compare stages, not the total with rdp-perf's own numbers.
#
#   devtools/bench/hops.sh [--bin-dir DIR] [--out DIR] [--messages N]
#                          [--cpus A,B] [--config FILE] [--smoke]
#
# --bin-dir: the hop-trace build (default build-hops, set up when missing).
# --config: a configuration file both sides load (e.g. srq-one.ini against
# rq8k.ini: what an SRQ adds to a hop).
# --smoke: a short run that checks every stage is stamped (the test suite).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"
bin_dir=$top/build-hops
out=$top/bench-results/hops
msgs=1000000
cpus=
cfg=()
while [ $# -gt 0 ]; do
	case "$1" in
	--bin-dir) bin_dir=$2; shift ;;
	--out) out=$2; shift ;;
	--messages) msgs=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--config) cfg=(-c "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift ;;
	--smoke) msgs=20000 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "hops.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -f "$bin_dir/build.ninja" ] ||
	meson setup "$bin_dir" "$top" --buildtype=release -Dtests=false -Dhop_trace=true >/dev/null
ninja -C "$bin_dir" >/dev/null
rdp=$bin_dir/apps/rdp-perf/rdp-perf
[ -n "$cpus" ] || cpus=$(bench_default_cpus)
cpu_a=${cpus%,*}
cpu_b=${cpus#*,}
mkdir -p "$out"
rm -f "$out"/server.hop "$out"/client.hop "$out"/hops.json
port=$((32000 + RANDOM % 2000))
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; true' EXIT

# shellcheck disable=SC2046
RDP_HOP_TRACE_FILE=$out/server.hop taskset -c "$cpu_b" "$rdp" $(bench_eal "$cpu_b" hsrv) -- \
	--server --quiet "${cfg[@]}" --listen "127.0.0.1:$port" >"$out/server.txt" 2>&1 &
srv=$!
bench_wait_listen "$port" "$srv" || { echo "hops.sh: the server does not listen (see $out/server.txt)" >&2; exit 1; }
# shellcheck disable=SC2046
RDP_HOP_TRACE_FILE=$out/client.hop taskset -c "$cpu_a" "$rdp" $(bench_eal "$cpu_a" hcli) -- \
	--connect "127.0.0.1:$port" -q "${cfg[@]}" -m lat -s 64 -n "$msgs" --json "$out/rdp-perf.json" \
	>"$out/client.txt" 2>&1 || { echo "hops.sh: rdp-perf failed (see $out/client.txt)" >&2; exit 1; }
kill -INT "$srv"
wait "$srv" || true
srv=
python3 "$here/hops.py" "$out/client.hop" "$out/server.hop" --json "$out/hops.json" |
	tee "$out/hops.txt"
