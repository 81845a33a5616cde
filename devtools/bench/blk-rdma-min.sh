#!/usr/bin/env bash
# Where rdp-blk's one-sided path starts to pay (load --rdma-min, docs/rdp-blk.md,
# "Performance"): for each block size, random reads and random writes of the
# memory device with the blocks in the messages (--rdma-min off) and
# one-sided (--rdma-min 0), in rounds that interleave the two, loopback
# (server process on the second CPU, loader on the first). Prints each
# subject's median IOPS over the rounds and the ratio one-sided / messages.
#
#   devtools/bench/blk-rdma-min.sh [--rounds N] [--runtime S] [--sizes LIST] [--bin-dir DIR]
#                                  [--driver SPEC] [--smoke]
#
# --smoke: one round of 0.3 s at 4k and 64k (the harness runs; nothing about
# speed is asserted).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rounds=3
runtime=2
sizes="4k 16k 64k 256k 1m"
bin_dir=$top/build-bench
driver=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--sizes) sizes=$2; shift ;;
	--bin-dir) bin_dir=$2; shift ;;
	--driver) driver=(--driver "$2"); shift ;;
	--smoke) rounds=1; runtime=0.3; sizes="4k 64k" ;;
	*) echo "usage: $0 [--rounds N] [--runtime S] [--sizes LIST] [--bin-dir DIR] [--driver SPEC] [--smoke]" >&2
	   exit 2 ;;
	esac
	shift
done
blk=$bin_dir/apps/rdp-blk/rdp-blk
[ -x "$blk" ] || { echo "blk-rdma-min.sh: no $blk (meson setup $bin_dir --buildtype=release && ninja -C $bin_dir)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.txt
for r in $(seq "$rounds"); do
	for bs in $sizes; do
		qd=32
		[ "$bs" = 1m ] && qd=8
		for rw in randread randwrite; do
			for m in off 0; do
				"$blk" -- load "${driver[@]}" --rw "$rw" --bs "$bs" --iodepth "$qd" --rdma-min "$m" \
					--size 256M --runtime "$runtime" --output-format=json \
					--output "$work/o.json" >"$work/load.log" 2>&1 ||
					{ cat "$work/load.log" >&2; exit 1; }
				python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; d="read" if sys.argv[3].endswith("read") else "write"; print(sys.argv[2], sys.argv[3], sys.argv[4], j[d]["iops"])' \
					"$work/o.json" "$bs" "$rw" "$m" >>"$results"
			done
		done
	done
done
python3 - "$results" "$sizes" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for bs, rw, m, iops in rows:
    med.setdefault((bs, rw, m), []).append(float(iops))
print("%-6s %-10s %12s %12s %8s  (median IOPS of %d rounds)" % ("bs", "rw", "messages", "one-sided",
      "ratio", len(rows) // len(med)))
for bs in sys.argv[2].split():
    for rw in ("randread", "randwrite"):
        a = statistics.median(med[(bs, rw, "off")])
        b = statistics.median(med[(bs, rw, "0")])
        print("%-6s %-10s %12.0f %12.0f %7.2fx" % (bs, rw, a, b, b / a))
PY
