#!/usr/bin/env bash
# The benchmark harness (docs/performance.md): rdp-perf on shm against UCX
# (ucx_perftest, UCX_TLS=sm,self) and libfabric (fi_pingpong, shm provider),
# and against the machine's own limits (cache-line ping-pong, batched SPSC
# ring), interleaved test by test over several rounds so that the machine's
# drift hits every tool alike. Each round starts and ends with the
# cache-line probe, which tells the VM's fast or slow state, and a short
# probe runs before every other run, so that each run has a state of its
# own (the state changes inside rounds).
#
#   devtools/bench/run.sh                 full run (builds build-bench and
#                                         build-bench-nocredit, 5 rounds)
#   devtools/bench/run.sh --smoke         one short round: checks that every
#                                         tool runs and JSON is written
#
# Options:
#   --rounds N        rounds (full: 5, smoke: 1)
#   --duration SEC    measured seconds per rdp-perf test (full: 2, smoke: 0.2)
#   --out DIR         results (default: bench-results/); bench.json and
#                     summary.md are written there, raw outputs under raw/
#   --bin-dir DIR     a meson build directory to take rdp-perf and the
#                     probes from instead of building build-bench
#   --nocredit-dir D  build directory of the -Dbench_no_credit=true build
#                     (default: build-bench-nocredit, set up when missing)
#   --only SET        ours (rdp-perf and probes), peers (UCX, libfabric) or
#                     all (default)
#   --cpus A,B        the two CPUs (default: the first two this process may use)
#   --wait-quiet SEC  before each round, wait up to SEC seconds for a moment
#                     when no other process is runnable (full: 60, smoke: 0)
#   --no-deps         do not install missing packages
# Exit status: 0; 1 when a tool failed; 77 (skipped, as meson counts it) when
# the peers were asked for and ucx_perftest or fi_pingpong is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"

smoke=0
rounds=
duration=
out=$top/bench-results
bin_dir=
nocredit_dir=$top/build-bench-nocredit
only=all
cpus=
deps=1
wait_quiet=
while [ $# -gt 0 ]; do
	case "$1" in
	--smoke) smoke=1 ;;
	--rounds) rounds=$2; shift ;;
	--duration) duration=$2; shift ;;
	--out) out=$2; shift ;;
	--bin-dir) bin_dir=$2; shift ;;
	--nocredit-dir) nocredit_dir=$2; shift ;;
	--only) only=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--wait-quiet) wait_quiet=$2; shift ;;
	--no-deps) deps=0 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
case "$only" in ours|peers|all) ;; *) echo "run.sh: --only ours|peers|all" >&2; exit 2 ;; esac

if [ $smoke = 1 ]; then
	rounds=${rounds:-1}
	duration=${duration:-0.2}
	scale=50            # divides the peers' iteration counts
	probe_s=0.2
	mark_s=0.05
	peer_tmo=30
	wait_quiet=${wait_quiet:-0}
	eps_list="1 16"
else
	rounds=${rounds:-5}
	duration=${duration:-2}
	scale=1
	probe_s=1
	mark_s=0.2
	peer_tmo=120
	wait_quiet=${wait_quiet:-60}
	eps_list="1 16 240 256 1024"
fi

want_ours() { [ "$only" != peers ]; }
want_peers() { [ "$only" != ours ]; }

# ---- tools ---------------------------------------------------------------
if [ $deps = 1 ]; then
	if want_peers; then "$top/devtools/deps.sh" bench; else "$top/devtools/deps.sh" build; fi
fi
build_tree() {	# build_tree DIR MESON-ARGS...
	local dir=$1; shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$top" "$@" >"$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log" >&2; return 1; }
	fi
	ninja -C "$dir" >"$dir.build.log" 2>&1 || { tail -40 "$dir.build.log" >&2; return 1; }
}
if want_ours; then
	if [ -z "$bin_dir" ]; then
		bin_dir=$top/build-bench
		build_tree "$bin_dir" --buildtype=release -Dtests=false
	fi
	build_tree "$nocredit_dir" --buildtype=release -Dtests=false -Dbench_no_credit=true
	rdp=$bin_dir/apps/rdp-perf/rdp-perf
	rdp_nc=$nocredit_dir/apps/rdp-perf/rdp-perf
	for b in "$rdp" "$rdp_nc" "$bin_dir"/devtools/bench/probe-{cacheline,spsc,ring,rings}; do
		[ -x "$b" ] || { echo "run.sh: $b is missing" >&2; exit 1; }
	done
	probe=$bin_dir/devtools/bench/probe
fi
have_ucx=0; have_fi=0
if want_peers; then
	command -v ucx_perftest >/dev/null && have_ucx=1
	command -v fi_pingpong >/dev/null && have_fi=1
fi

if [ -z "$cpus" ]; then
	cpus=$(bench_default_cpus)
fi
cpu_a=${cpus%,*}
cpu_b=${cpus#*,}
ncpu=$(nproc)

mkdir -p "$out/raw"
rm -f "$out"/raw/* "$out/index.tsv" "$out/bench.json" "$out/summary.md"
index=$out/index.tsv
printf 'round\tseq\ttest\ttool\tstatus\tfile\tnote\n' >"$index"
seq=0
failures=0

# record ROUND TEST TOOL STATUS FILE NOTE
record() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$seq" "$2" "$3" "$4" "$5" "$6" >>"$index"
	seq=$((seq + 1))
}

# base ROUND TEST TOOL: the raw-file prefix of the next run
base() { echo "$out/raw/r$1-$(printf %03d "$seq")-$2-$3"; }

# run_tool ROUND TEST TOOL TIMEOUT CMD...: stdout and stderr to raw files;
# a failure is recorded with the first line of stderr that says why, and the
# run is tried once more (a loaded machine can starve a handshake)
run_tool() {
	local r=$1 test=$2 tool=$3 tmo=$4; shift 4
	local f rc try why
	# a short probe before every run: report.py classifies each run by the
	# probes just before and after it (the state changes inside rounds)
	[ "$tool" = cacheline ] || [ -n "${NO_MARK:-}" ] || state_mark "$r"
	f=$(base "$r" "$test" "$tool")
	for try in 1 2; do
		rc=0
		timeout -k 5 "$tmo" "$@" >"$f.out" 2>"$f.err" || rc=$?
		if [ $rc = 0 ]; then
			record "$r" "$test" "$tool" ok "$(basename "$f")" ""
			return 0
		fi
		# rdp-perf's own verdict first: its peer's departure is logged on every exit
		why=$({ grep -m1 '^rdp-perf:' "$f.err" ||
			grep -m1 -iE 'fail|error|refused|cannot' "$f.err"; } | tr '\t' ' ' | cut -c1-240 || true)
		[ $rc = 124 ] && why="timed out after ${tmo}s; $why"
		if [ $try = 1 ] && [ -z "${NO_RETRY:-}" ]; then
			cp "$f.err" "$f.err.try1"
			record "$r" "$test" "$tool" retried "$(basename "$f")" "exit $rc: $why"
			echo "run.sh: round $r $test $tool failed (exit $rc), once more: $why" >&2
			continue
		fi
		record "$r" "$test" "$tool" failed "$(basename "$f")" "exit $rc: $why"
		echo "run.sh: round $r $test $tool failed (exit $rc): $why" >&2
		return 1
	done
	return 1
}

# control ports below the kernel's ephemeral range
port=$((20000 + RANDOM % 10000))
next_port() { port=$((port + 1)); }
servers=()
# shellcheck disable=SC2154  # p is the trap's own loop variable
trap 'for p in ${servers[@]+"${servers[@]}"}; do kill "$p" 2>/dev/null || true; done' EXIT

# ---- one test per tool ---------------------------------------------------
# rdp_run ROUND TEST TOOL BINARY RDP-PERF-ARGS...; a failure counts unless
# TOLERATE is set (then it is only reported)
rdp_run() {
	local r=$1 test=$2 tool=$3 bin=$4 f; shift 4
	state_mark "$r" # before the name of its JSON file is taken: a mark is a run too
	f=$(base "$r" "$test" "$tool")
	NO_MARK=1 run_tool "$r" "$test" "$tool" 180 taskset -c "$cpu_a,$cpu_b" "$bin" -- -q \
		-d "$duration" --json "$f.json" "$@" || [ -n "${TOLERATE:-}" ] ||
		failures=$((failures + 1))
}

# ucx_run ROUND TEST (lat|bw) SIZE ITERS
ucx_run() {
	local r=$1 test=$2 kind=$3 size=$4 iters=$5 srv
	next_port
	state_mark "$r" # before the server starts: it must not share the probe's CPUs
	UCX_TLS=sm,self taskset -c "$cpu_b" ucx_perftest -p "$port" -c "$cpu_b" \
		>"$out/raw/ucx-server-$port.log" 2>&1 &
	srv=$!
	servers+=("$srv")
	bench_wait_listen "$port" "$srv" || echo "run.sh: ucx_perftest server on port $port is not listening" >&2
	# the server serves one run: no second try without a new server
	UCX_TLS=sm,self NO_RETRY=1 NO_MARK=1 run_tool "$r" "$test" ucx "$peer_tmo" taskset -c "$cpu_a" ucx_perftest 127.0.0.1 \
		-p "$port" -c "$cpu_a" -t "tag_$kind" -s "$size" -n "$iters" \
		-w $((iters / 20 + 10)) -v || failures=$((failures + 1))
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
}

# fi_run ROUND TEST SIZE ITERS
fi_run() {
	local r=$1 test=$2 size=$3 iters=$4 srv
	next_port
	state_mark "$r"
	taskset -c "$cpu_b" fi_pingpong -p shm -e rdm -I "$iters" -S "$size" -B "$port" \
		>"$out/raw/fi-server-$port.log" 2>&1 &
	srv=$!
	servers+=("$srv")
	bench_wait_listen "$port" "$srv" || echo "run.sh: fi_pingpong server on port $port is not listening" >&2
	NO_RETRY=1 NO_MARK=1 run_tool "$r" "$test" "fi" "$peer_tmo" taskset -c "$cpu_a" fi_pingpong -p shm -e rdm -I "$iters" \
		-S "$size" -P "$port" 127.0.0.1 || failures=$((failures + 1))
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
}

# others_running: the most runnable tasks other than this script seen in
# 0.5 s (from /proc/stat; the reading itself is one)
others_running() {
	local n max=0 _
	for _ in 1 2 3 4 5; do
		n=$(awk '/^procs_running/ {print $2}' /proc/stat)
		[ "$n" -gt "$max" ] && max=$n
		sleep 0.1
	done
	echo $((max > 1 ? max - 1 : 0))
}

# wait_for_quiet ROUND: up to $wait_quiet seconds for no other runnable task
wait_for_quiet() {
	local deadline=$((SECONDS + ${wait_quiet%.*})) n
	n=$(others_running)
	while [ "$n" -gt 0 ] && [ $SECONDS -lt $deadline ]; do
		sleep 1
		n=$(others_running)
	done
	echo "$n" >"$out/raw/r$1-others-running.txt"
	[ "$n" -gt 0 ] && echo "run.sh: round $1 starts with $n other runnable task(s)"
	return 0
}

state_probe() {	# state_probe ROUND WHEN
	run_tool "$1" "state-$2" cacheline 60 "$probe-cacheline" --cpu-a "$cpu_a" --cpu-b "$cpu_b" \
		--duration "$probe_s" || failures=$((failures + 1))
}

# state_mark ROUND: the machine's state right now (a short cache-line probe);
# without our probes (--only peers) there is nothing to mark with
state_mark() {
	[ -n "${probe:-}" ] || return 0
	run_tool "$1" mark cacheline 60 "$probe-cacheline" --cpu-a "$cpu_a" --cpu-b "$cpu_b" \
		--duration "$mark_s" || failures=$((failures + 1))
}

# ---- the rounds ------------------------------------------------------------
cfg=$here
echo "run.sh: $rounds round(s), $duration s per rdp-perf test, CPUs $cpu_a,$cpu_b, results in $out"
for r in $(seq 1 "$rounds"); do
	echo "run.sh: round $r of $rounds"
	wait_for_quiet "$r"
	cat /proc/loadavg >"$out/raw/r$r-loadavg-start.txt"
	want_ours && state_probe "$r" start

	# 64 B ping-pong latency
	want_ours && rdp_run "$r" lat64 rdp "$rdp" -m lat -s 64
	[ $have_ucx = 1 ] && ucx_run "$r" lat64 lat 64 $((1000000 / scale))
	[ $have_fi = 1 ] && fi_run "$r" lat64 64 $((500000 / scale))

	# message rate and bandwidth, windowed streams
	for s in 64 4096 65536; do
		case $s in 64) n=4000000 ;; 4096) n=1000000 ;; *) n=100000 ;; esac
		want_ours && rdp_run "$r" "bw$s" rdp "$rdp" -c "$cfg/stream.ini" -m bw -s "$s"
		# the same stream with the default configuration (queues of 256)
		[ "$s" != 65536 ] && want_ours && rdp_run "$r" "bw$s" rdp-default "$rdp" -m bw -s "$s"
		[ $have_ucx = 1 ] && ucx_run "$r" "bw$s" bw "$s" $((n / scale))
		want_ours && { run_tool "$r" "bw$s" spsc 60 "$probe-spsc" --size "$s" \
			--cpu-a "$cpu_a" --cpu-b "$cpu_b" --duration "$probe_s" || failures=$((failures + 1)); }
	done

	if want_ours; then
		# the credit protocol's cost: the same configuration (RQ four times
		# the SQ, so that the bypass build cannot outrun the receiver), with
		# and without flow control
		rdp_run "$r" credit rdp "$rdp" -c "$cfg/nocredit.ini" -m bw -s 64,4096
		rdp_run "$r" credit rdp-nocredit "$rdp_nc" -c "$cfg/nocredit.ini" -m bw -s 64,4096

		# connection scaling: endpoints on one poller lcore
		for e in $eps_list; do
			TOLERATE=1 NO_RETRY=1 rdp_run "$r" "eps$e" rdp "$rdp" -c "$cfg/scale.ini" -e "$e" -w 16 \
				-m bw -s 64
		done
		# what the connections alone cost: as many endpoints, one of them busy
		TOLERATE=1 NO_RETRY=1 rdp_run "$r" busy1 rdp "$rdp" -c "$cfg/scale.ini" \
			-e "${eps_list##* }" --busy 1 -w 16 -m bw -s 64
		# the limit: one ring per connection, bare and with a stack's work per message
		rings_list=$(printf '%s\n' 1 "${eps_list##* }" | sort -nu)
		for w in 0 40; do
			for e in $rings_list; do
				run_tool "$r" "rings$e-w$w" rings 60 "$probe-rings" --rings "$e" --work "$w" \
					--cpu-a "$cpu_a" --cpu-b "$cpu_b" --duration "$probe_s" ||
					failures=$((failures + 1))
			done
		done

		# the pipeline's ring handoff
		run_tool "$r" ring ring 60 "$probe-ring" --cpu-a "$cpu_a" --cpu-b "$cpu_b" \
			--duration "$probe_s" || failures=$((failures + 1))
		if [ "$ncpu" -ge 3 ]; then
			rdp_run "$r" pipeline rdp "$rdp" --pipeline -m lat,bw -s 64
		else
			record "$r" pipeline rdp skipped "" "needs 3 CPUs (client poller, client application lcore, server poller); this machine has $ncpu"
		fi
		state_probe "$r" end
	fi
	cat /proc/loadavg >"$out/raw/r$r-loadavg-end.txt"
done

# ---- report --------------------------------------------------------------
mode=full; [ $smoke = 1 ] && mode=smoke
python3 "$here/report.py" --out "$out" --mode "$mode" --only "$only" \
	--cpus "$cpu_a,$cpu_b" --have-ucx $have_ucx --have-fi $have_fi --eps "$eps_list"
rc=$?
[ $rc != 0 ] && exit $rc
[ $failures -gt 0 ] && { echo "run.sh: $failures tool run(s) failed (see $index)" >&2; exit 1; }
if want_peers && { [ $have_ucx = 0 ] || [ $have_fi = 0 ]; }; then
	[ $have_ucx = 0 ] && echo "run.sh: SKIP: ucx_perftest (Debian package ucx-utils) is not installed"
	[ $have_fi = 0 ] && echo "run.sh: SKIP: fi_pingpong (Debian package libfabric-bin) is not installed"
	exit 77
fi
exit 0
