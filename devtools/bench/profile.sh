#!/usr/bin/env bash
# Where the time goes on the hot path (docs/performance.md, "Where the time
# goes").
#
# callgrind counts instructions, which does not depend on the VM's fast or
# slow state nor on other processes, so the breakdown is repeatable. One
# side runs under callgrind (--separate-threads) while the other runs
# natively, each pinned to its own CPU:
#   bw64-sender     rdp-perf client, 64 B stream: the send path
#   bw64-receiver   rdp-perf server, same stream: the receive path
#   lat64-client    rdp-perf client, 64 B ping-pong
#   bw64-pipeline   rdp-perf client in pipeline mode: the ring handoff
#   lat64-short, lat64-long, ucx-lat.*
#                   rdp-perf's ping-pong client and ucx_perftest's tag_lat
#                   client, each at two lengths: cg_periter.py gives each
#                   one's instructions per round trip, whole process
#   credit-sender, nocredit-sender
#                   the sender with nocredit.ini, in this build and in the
#                   -Dbench_no_credit=true build (--nocredit-dir): the credit
#                   protocol's instructions per message. (The bypass build's
#                   receiver cannot be profiled: a native sender outruns a
#                   receiver under callgrind and, without credits, waits on
#                   RNR retries forever.)
# cg_permsg.py divides each function's instructions by the messages. When
# `perf stat -e cpu-clock true` works, a time profile (perf record -e
# cpu-clock) of a native loopback 64 B stream is added.
#
#   devtools/bench/profile.sh [--bin-dir DIR] [--nocredit-dir DIR] [--out DIR]
#                             [--messages N] [--cpus A,B]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"
bin_dir=$top/build-bench
nc_dir=$top/build-bench-nocredit
out=$top/bench-results/profile
msgs=200000
cpus=
while [ $# -gt 0 ]; do
	case "$1" in
	--bin-dir) bin_dir=$2; shift ;;
	--nocredit-dir) nc_dir=$2; shift ;;
	--out) out=$2; shift ;;
	--messages) msgs=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "profile.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
command -v valgrind >/dev/null || { echo "profile.sh: needs valgrind (devtools/deps.sh bench)" >&2; exit 1; }
build() {	# build DIR MESON-ARGS...
	local dir=$1; shift
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$top" --buildtype=release -Dtests=false \
		"$@" >/dev/null
	ninja -C "$dir" >/dev/null
}
build "$bin_dir"
build "$nc_dir" -Dbench_no_credit=true
rdp=$bin_dir/apps/rdp-perf/rdp-perf
rdp_main=$rdp
if [ -z "$cpus" ]; then
	cpus=$(bench_default_cpus)
fi
cpu_a=${cpus%,*}
cpu_b=${cpus#*,}
mkdir -p "$out"
rm -f "$out"/cg.* "$out"/*.json "$out"/*.txt
port=$((30000 + RANDOM % 2000))
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; true' EXIT

wait_listen() {	# wait_listen PORT: bench_wait_listen, saying so when nothing listens
	bench_wait_listen "$1" || { echo "profile.sh: nothing listens on port $1" >&2; return 1; }
}

# client_under_cg NAME RDP-PERF-CLIENT-ARGS...: native server, client profiled
client_under_cg() {
	local name=$1; shift
	local cfg=()
	[ "${1:-}" = -c ] && cfg=(-c "$2")
	port=$((port + 1))
	# shellcheck disable=SC2046
	taskset -c "$cpu_b" "$rdp" $(bench_eal "$cpu_b" srv) -- --server --quiet \
		--listen "127.0.0.1:$port" "${cfg[@]}" >"$out/$name.server.txt" 2>&1 &
	srv=$!
	wait_listen "$port"
	# shellcheck disable=SC2046
	taskset -c "$cpu_a" valgrind --tool=callgrind --separate-threads=yes \
		--callgrind-out-file="$out/cg.$name" "$rdp" $(bench_eal "$cpu_a" cli) -- \
		--connect "127.0.0.1:$port" -q -n "$msgs" --json "$out/$name.rdp-perf.json" "$@" \
		>"$out/$name.client.txt" 2>&1 ||
		echo "profile.sh: $name: rdp-perf failed (see $out/$name.client.txt)" >&2
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=
}

# server_under_cg NAME RDP-PERF-CLIENT-ARGS...: profiled server, native client
server_under_cg() {
	local name=$1 pid; shift
	local cfg=()
	[ "${1:-}" = -c ] && cfg=(-c "$2")
	port=$((port + 1))
	# shellcheck disable=SC2046
	taskset -c "$cpu_b" valgrind --tool=callgrind --separate-threads=yes \
		--callgrind-out-file="$out/cg.$name" "$rdp" $(bench_eal "$cpu_b" srv) -- --server --quiet \
		--listen "127.0.0.1:$port" "${cfg[@]}" >"$out/$name.server.txt" 2>&1 &
	pid=$!
	srv=$pid
	wait_listen "$port"
	# shellcheck disable=SC2046
	taskset -c "$cpu_a" "$rdp" $(bench_eal "$cpu_a" cli) -- --connect "127.0.0.1:$port" -q \
		-n "$msgs" --json "$out/$name.rdp-perf.json" "$@" >"$out/$name.client.txt" 2>&1 ||
		echo "profile.sh: $name: rdp-perf failed (see $out/$name.client.txt)" >&2
	kill -INT "$pid"
	wait "$pid" || true
	srv=
}

# ucx_lat_under_cg ITERS: ucx_perftest tag_lat, 64 B, its client profiled
ucx_lat_under_cg() {
	port=$((port + 1))
	UCX_TLS=sm,self taskset -c "$cpu_b" ucx_perftest -p "$port" -c "$cpu_b" \
		>"$out/ucx-lat.$1.server.txt" 2>&1 &
	srv=$!
	wait_listen "$port"
	UCX_TLS=sm,self taskset -c "$cpu_a" valgrind --tool=callgrind \
		--callgrind-out-file="$out/cg.ucx-lat.$1" ucx_perftest 127.0.0.1 -p "$port" \
		-c "$cpu_a" -t tag_lat -s 64 -n "$1" >"$out/ucx-lat.$1.client.txt" 2>&1 ||
		echo "profile.sh: ucx_perftest failed (see $out/ucx-lat.$1.client.txt)" >&2
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=
}

# completed NAME: the round trips rdp-perf's client of case NAME completed
completed() {
	grep -o '"messages_completed": [0-9]*' "$out/$1.rdp-perf.json" | grep -o '[0-9]*$'
}

echo "profile.sh: callgrind, $msgs messages per case, CPUs $cpu_a,$cpu_b, results in $out"
client_under_cg bw64-sender -m bw -s 64
server_under_cg bw64-receiver -m bw -s 64
client_under_cg lat64-client -m lat -s 64
client_under_cg bw64-pipeline --pipeline -m bw -s 64
for build in credit nocredit; do
	rdp=$rdp_main
	[ $build = nocredit ] && rdp=$nc_dir/apps/rdp-perf/rdp-perf
	client_under_cg "$build-sender" -c "$here/nocredit.ini" -m bw -s 64
done
rdp=$rdp_main

{
	python3 "$here/cg_permsg.py" "$out/cg.bw64-sender" --per "json:$out/bw64-sender.rdp-perf.json" \
		--label "64 B stream, sender (per message sent)" --json "$out/bw64-sender.json"
	echo
	python3 "$here/cg_permsg.py" "$out/cg.bw64-receiver" --per rdp_msg_free \
		--label "64 B stream, receiver (per message received)" --json "$out/bw64-receiver.json"
	echo
	python3 "$here/cg_permsg.py" "$out/cg.lat64-client" --per "json:$out/lat64-client.rdp-perf.json" \
		--label "64 B ping-pong, client (per round trip)" --json "$out/lat64-client.json"
	echo
	python3 "$here/cg_permsg.py" "$out/cg.bw64-pipeline" --per "json:$out/bw64-pipeline.rdp-perf.json" \
		--label "64 B stream, sender in pipeline mode (per message sent)" \
		--json "$out/bw64-pipeline.json"
	for build in credit nocredit; do
		echo
		python3 "$here/cg_permsg.py" "$out/cg.$build-sender" \
			--per "json:$out/$build-sender.rdp-perf.json" \
			--label "64 B stream, sender, nocredit.ini, $build build" \
			--json "$out/$build-sender.json"
	done
} | tee "$out/callgrind.txt"

# The ping-pong client as a whole process, ours and UCX's: each runs twice
# (two lengths) and cg_periter.py divides the difference, so that start-up
# and connection cancel out and both are counted the same way.
short=$((msgs / 10))
long=$((msgs * 3 / 10))
if command -v ucx_perftest >/dev/null; then
	client_under_cg lat64-short -m lat -s 64 -n "$short"
	client_under_cg lat64-long -m lat -s 64 -n "$long"
	ucx_lat_under_cg "$short"
	ucx_lat_under_cg "$long"
	{
		echo
		python3 "$here/cg_periter.py" --label "rdp-perf ping-pong client, 64 B" \
			"$out/cg.lat64-short" "$(completed lat64-short)" \
			"$out/cg.lat64-long" "$(completed lat64-long)" --json "$out/lat64-periter.json"
		echo
		python3 "$here/cg_periter.py" --label "ucx_perftest tag_lat client, 64 B" \
			"$out/cg.ucx-lat.$short" "$short" "$out/cg.ucx-lat.$long" "$long" \
			--json "$out/ucx-lat-periter.json"
	} | tee -a "$out/callgrind.txt"
else
	echo "profile.sh: ucx_perftest is not installed: no comparison with UCX's client" |
		tee -a "$out/callgrind.txt"
fi

if perf stat -e cpu-clock true >/dev/null 2>&1; then
	taskset -c "$cpu_a,$cpu_b" perf record -q -e cpu-clock -F 2999 -o "$out/perf.data" -- \
		"$rdp" -- -q -m bw -s 64 -d 3 >"$out/perf-run.txt" 2>&1 || true
	perf report -i "$out/perf.data" --sort comm,sym --stdio >"$out/perf-report.txt" 2>/dev/null || true
	grep -v -e '^#' -e '^$' "$out/perf-report.txt" | sed -n 1,30p | tee "$out/perf.txt"
fi
