#!/usr/bin/env bash
# Where a run's time goes, by source line, in nanoseconds per message on each
# side (docs/performance.md, "Where the time goes"). It resolves changes
# that throughput runs on a noisy machine cannot, and it shows where a
# stall went when a change only moved it.
#
# One rdp-perf loopback run under `perf record -e cpu-clock` (both processes,
# both pollers), in a build with debug info so that samples name their lines.
# The run is repeated until the cache-line probes just before and just after
# it both read the fast state, by report.py's rule (--any-state takes the
# first run).
#
#   devtools/bench/stalls.sh [--bin-dir DIR] [--no-build] [--out PREFIX]
#                            [--tries N] [--freq HZ] [--any-state] [--cpus A,B]
#                            [--smoke] [-- RDP-PERF-ARGS]
#
# --freq defaults to 2000 samples a second on each CPU (10000 in --smoke):
# sampling much faster slows the run it measures and overstates what a
# change saves (docs/performance.md, "Reproduce").
#
# --no-build takes --bin-dir as it is: a copy of a build tree (one per
# variant of an A/B comparison) would otherwise be rebuilt from the sources
# it was configured for.
#
# --smoke (the test command's): no build (--bin-dir must hold one), one short
# run in any state (up to three while a run completes no message, as on a
# machine crowded by other work), and stalls.py must find both sides in it. It exits 77
# (skipped) when perf is missing or cannot sample on this machine.
#
# RDP-PERF-ARGS default to the scaling test at 1024 endpoints. Writes
# PREFIX.txt (perf report: samples by process, symbol and line),
# PREFIX.json (rdp-perf's results) and PREFIX.meta (rate, probes). Then
#   devtools/bench/stalls.py PREFIX[,PREFIX2...] [OTHER[,OTHER2...]]
# prints each side's ns per message by function and by line, and with a
# second set the difference (the first set's runs are averaged).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"
bin_dir=$top/build-stalls
out=$top/bench-results/stalls/run
tries=6
freq=
any_state=0
smoke=0
build=1
cpus=
while [ $# -gt 0 ]; do
	case "$1" in
	--bin-dir) bin_dir=$2; shift ;;
	--out) out=$2; shift ;;
	--tries) tries=$2; shift ;;
	--freq) freq=$2; shift ;;
	--any-state) any_state=1 ;;
	--no-build) build=0 ;;
	--smoke) smoke=1; any_state=1; tries=3 ;;
	--cpus) cpus=$2; shift ;;
	--) shift; break ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "stalls.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [ $# -eq 0 ]; then
	if [ $smoke = 1 ]; then
		set -- -d 0.2 -m bw -s 64
	else
		set -- -d 6 -c "$here/scale.ini" -e 1024 -w 16 -m bw -s 64
	fi
fi
[ -n "$freq" ] || { [ $smoke = 1 ] && freq=10000 || freq=2000; }
no_perf=1
[ $smoke = 1 ] && no_perf=77
command -v perf >/dev/null ||
	{ echo "stalls.sh: needs perf (devtools/deps.sh bench installs linux-perf)" >&2; exit $no_perf; }
perf record -q -e cpu-clock -o /dev/null -- true >/dev/null 2>&1 ||
	{ echo "stalls.sh: perf cannot sample here (kernel.perf_event_paranoid?)" >&2; exit $no_perf; }
if [ $smoke = 0 ] && [ $build = 1 ]; then
	if [ ! -f "$bin_dir/build.ninja" ]; then
		meson setup "$bin_dir" "$top" --buildtype=release -Ddebug=true -Dtests=false >/dev/null
	fi
	ninja -C "$bin_dir" >/dev/null
fi
rdp=$bin_dir/apps/rdp-perf/rdp-perf
probe=$bin_dir/devtools/bench/probe-cacheline
[ -n "$cpus" ] || cpus=$(bench_default_cpus)
mkdir -p "$(dirname "$out")"

# one_way_ns: the probe's 10th percentile, the machine's state just now
one_way_ns() {
	"$probe" --cpu-a "${cpus%,*}" --cpu-b "${cpus#*,}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["oneway_ns_p10"])'
}
# fast NS: the fast state by report.py's rule, the one every bench table uses
fast() {
	python3 -c "import sys; sys.path.insert(0, sys.argv[1]); from report import FAST_BELOW_NS; \
sys.exit(0 if float(sys.argv[2]) < FAST_BELOW_NS else 1)" "$here" "$1"
}

for try in $(seq "$tries"); do
	before=$(one_way_ns)
	perf record -q -e cpu-clock -F "$freq" -o "$out.data" -- \
		taskset -c "$cpus" "$rdp" -- -q --json "$out.json" "$@" >"$out.log" 2>&1 ||
		{ echo "stalls.sh: rdp-perf failed:" >&2; tail -5 "$out.log" >&2; exit 1; }
	after=$(one_way_ns)
	rate=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0]["msg_rate"])' "$out.json")
	echo "stalls.sh: try $try: $rate msg/s, probes $before ns / $after ns"
	# a run in which no message completed (a machine crowded by other work)
	# has no time per message to share out: not a measurement
	if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$rate"; then
		:
	else
		echo "stalls.sh: try $try: no message completed; again" >&2
		continue
	fi
	if [ $any_state = 1 ] || { fast "$before" && fast "$after"; }; then
		printf '{"freq": %s, "msg_rate": %s, "probe_p10_before_ns": %s, "probe_p10_after_ns": %s}\n' \
			"$freq" "$rate" "$before" "$after" >"$out.meta"
		perf report -i "$out.data" -n --no-children --sort pid,sym,srcline -q -t '|' \
			>"$out.txt" 2>/dev/null
		rm -f "$out.data"
		if [ $smoke = 1 ]; then
			"$here/stalls.py" "$out" --top 3
		else
			echo "stalls.sh: wrote $out.txt; devtools/bench/stalls.py $out"
		fi
		exit 0
	fi
done
rm -f "$out.data"
echo "stalls.sh: no run in the fast state with messages in $tries tries (--any-state takes any state)" >&2
exit 1
