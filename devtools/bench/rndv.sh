#!/usr/bin/env bash
# Rendezvous messages on shm against what they replace and what they are
# made of, measured side by side (docs/performance.md, "Targets" and
# "Rendezvous"):
#   - rdp-perf -m bw at 1 MiB by rendezvous against the same messages in
#     chunks (rndv_threshold raised above them);
#   - rdp-perf -m bw at 1 MiB and 16 MiB by rendezvous against -m write of
#     the same size (one-sided bandwidth into an allocated region);
#   - the threshold: -m bw and -m lat at 16 KiB to 256 KiB, chunked
#     against rendezvous.
# Each subject run is bracketed by two runs of its reference (reference,
# subject, reference); a pair counts only when its brackets agree within
# 15 % (the VM did not change state around it), and each comparison gets
# the median of its pairs' ratios (for lat, the inverse ratio of the p50).
#
#   devtools/bench/rndv.sh [--iterations N] [--duration S] [--bin-dir DIR] [--smoke]
#
# --bin-dir: a build tree with apps/rdp-perf (default: build-bench, built
# by run.sh). --smoke: one short iteration, the threshold at 64 KiB only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
iterations=3
duration=1
bin_dir=$top/build-bench
sweep="16384 32768 65536 131072 262144"
while [ $# -gt 0 ]; do
	case "$1" in
	--iterations) iterations=$2; shift ;;
	--duration) duration=$2; shift ;;
	--bin-dir) bin_dir=$2; shift ;;
	--smoke) iterations=1; duration=0.2; sweep=65536 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "rndv.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
rdp=$bin_dir/apps/rdp-perf/rdp-perf
[ -x "$rdp" ] || { echo "rndv.sh: $rdp is missing (build it, or run devtools/bench/run.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# chunked: every size measured here goes in chunks (1 MiB fits the default window)
printf '[global]\nrndv_threshold = 1048576\n' > "$work/chunked.ini"
printf '[global]\n' > "$work/default.ini"

# run CONFIG MODE SIZE: one rdp-perf loopback run; prints msg/s (bw, write) or 1e9/p50 (lat)
run() {
	local cfg=$1 mode=$2 size=$3
	timeout 120 "$rdp" -- -q -c "$work/$cfg.ini" -m "$mode" -s "$size" -d "$duration" \
		2>/dev/null | awk -v m="$mode" '$1 == m { if (m == "lat") print ($6 > 0 ? 1e9 / $6 : "nan");
			else print $4 }' || true
}

rows=()
# pair NAME SIZE REF_CFG REF_MODE SUBJ_CFG SUBJ_MODE
pair() {
	local name=$1 size=$2 r1 r2 v
	r1=$(run "$3" "$4" "$size")
	v=$(run "$5" "$6" "$size")
	r2=$(run "$3" "$4" "$size")
	rows+=("$name $size ${r1:-nan} ${r2:-nan} ${v:-nan}")
	echo "rndv.sh: iteration $it of $iterations: ${rows[-1]}" >&2
}

for it in $(seq "$iterations"); do
	pair rndv_vs_chunked_bw 1048576 chunked bw default bw
	pair rndv_vs_write_bw 1048576 default write default bw
	pair rndv_vs_write_bw 16777216 default write default bw
	for size in $sweep; do
		# rndv_threshold just below the size: rendezvous; the chunked config: chunks
		printf '[global]\nrndv_threshold = %d\n' $((size - 1)) > "$work/below.ini"
		pair threshold_bw "$size" chunked bw below bw
		pair threshold_lat "$size" chunked lat below lat
	done
done

printf '%s\n' "${rows[@]}" | python3 "$here/bracket_report.py"
