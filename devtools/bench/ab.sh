#!/usr/bin/env bash
# Compare builds (or configurations) of rdp-perf side by side, in many short
# interleaved runs, and say how finely the comparison resolves (ab.py).
#
# On a noisy machine one long run of a build proves little: the same build
# varies from run to run by more than most changes are worth
# (docs/performance.md, "Method"). Many short runs, alternated, each
# bracketed by cache-line probes, with the ratio taken within rounds, give
# a ratio and an interval one can act on.
#
#   devtools/bench/ab.sh [--rounds N] [--duration S] [--config FILE]
#                        [--out PREFIX] [--cpus A,B] [--smoke]
#                        NAME=BUILD_DIR[:CONFIG[:ARGS]] ... [-- RDP-PERF-ARGS]
#
# The first variant is the reference. Each is a build tree that holds
# apps/rdp-perf/rdp-perf and devtools/bench/probe-cacheline (copy a build
# tree per variant: `cp -a build-release build-ab-base`), optionally a config
# file of its own instead of --config (default: scale.ini), and optionally
# rdp-perf arguments of its own, put after the common ones (rdp-perf takes
# the last of a repeated option). The same build with two configs compares
# configurations; with `-e 1` as one variant's ARGS, the scaling target
# itself (1024 endpoints against one) is measured round by round:
#   ab.sh one=build-stalls:devtools/bench/scale.ini:"-e 1" all=build-stalls
#
# RDP-PERF-ARGS default to the scaling test at 1024 endpoints
# (`-e 1024 -w 16 -m bw -s 64`); `-d` comes from --duration (default 1.5)
# and `-c` from the variant. Rounds run the variants in turn, reversing the
# order every other round; a probe runs before the first run and after
# every run, so each run has a probe on each side. 30 rounds of two
# variants take about 6 minutes here.
#
# Writes PREFIX.jsonl (one line per run) and prints ab.py's report:
# per variant and machine state the median rate, and for each variant
# against the reference the median of the ratios within rounds, with a
# bootstrap 90 % interval. The interval's half-width is what the run
# resolves; a difference inside it is noise. In a latency mode (`-m lat`)
# the same report follows for the p50, its ratio the variant's p50 over the
# reference's.
#
# --smoke (the test command's): one round of 0.2 s runs of one endpoint,
# any state; ab.py must report every variant.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devtools/bench/bench_lib.sh
. "$here/bench_lib.sh"
rounds=30
duration=1.5
config=$here/scale.ini
out=$(cd "$here/../.." && pwd)/bench-results/ab/run
cpus=
smoke=0
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--duration) duration=$2; shift ;;
	--config) config=$2; shift ;;
	--out) out=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--smoke) smoke=1; rounds=1; duration=0.2 ;;
	--) shift; break ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*=*) break ;;
	*) echo "ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
names=() dirs=() configs=() extras=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	case "$1" in
	*=*) ;;
	*) echo "ab.sh: '$1': expected NAME=BUILD_DIR[:CONFIG]" >&2; exit 2 ;;
	esac
	name=${1%%=*} spec=${1#*=}
	dir=${spec%%:*} cfg=$config extra=
	if [ "$spec" != "$dir" ]; then
		cfg=${spec#*:}
		case "$cfg" in
		*:*) extra=${cfg#*:} cfg=${cfg%%:*} ;;
		esac
	fi
	[ -x "$dir/apps/rdp-perf/rdp-perf" ] ||
		{ echo "ab.sh: $name: no $dir/apps/rdp-perf/rdp-perf" >&2; exit 2; }
	[ -f "$cfg" ] || { echo "ab.sh: $name: no config file $cfg" >&2; exit 2; }
	names+=("$name") dirs+=("$dir") configs+=("$cfg") extras+=("$extra")
	shift
done
[ $# -gt 0 ] && shift # the --
[ ${#names[@]} -ge 2 ] || { echo "ab.sh: give at least two variants (see --help)" >&2; exit 2; }
if [ $# -eq 0 ]; then
	if [ $smoke = 1 ]; then
		set -- -m bw -s 64
	else
		set -- -e 1024 -w 16 -m bw -s 64
	fi
fi
[ -n "$cpus" ] || cpus=$(bench_default_cpus)
probe=${dirs[0]}/devtools/bench/probe-cacheline
[ -x "$probe" ] || { echo "ab.sh: no $probe" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
: >"$out.jsonl"

one_way_ns() {
	"$probe" --cpu-a "${cpus%,*}" --cpu-b "${cpus#*,}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["oneway_ns_p10"])'
}

n=${#names[@]}
before=$(one_way_ns)
for round in $(seq "$rounds"); do
	for k in $(seq 0 $((n - 1))); do
		# every other round backwards, so that neither variant always goes first
		i=$k
		[ $((round % 2)) = 0 ] && i=$((n - 1 - k))
		json=$out.${names[$i]}.json
		rm -f "$json"
		# the variant's own arguments are split into words on purpose
		# shellcheck disable=SC2086
		if ! taskset -c "$cpus" "${dirs[$i]}/apps/rdp-perf/rdp-perf" -- -q --json "$json" \
			-d "$duration" -c "${configs[$i]}" "$@" ${extras[$i]} >"$out.log" 2>&1; then
			echo "ab.sh: ${names[$i]}: rdp-perf failed in round $round:" >&2
			tail -5 "$out.log" >&2
			exit 1
		fi
		after=$(one_way_ns)
		python3 - "$json" "$round" "${names[$i]}" "$before" "$after" >>"$out.jsonl" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))['results'][0]
print(json.dumps({'round': int(sys.argv[2]), 'name': sys.argv[3], 'msg_rate': res['msg_rate'],
                  'lat_p50_ns': res.get('lat_p50_ns', 0),
                  'probe_before_ns': float(sys.argv[4]), 'probe_after_ns': float(sys.argv[5])}))
PY
		before=$after
	done
done
rm -f "$out.log" "$out".*.json
"$here/ab.py" "$out.jsonl" --ref "${names[0]}" --expect "$(IFS=,; echo "${names[*]}")"
