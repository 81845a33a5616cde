#!/usr/bin/env bash
# rdp-blk's file backend against its blocking baseline and fio's ceiling,
# in one run (docs/rdp-blk.md, "Performance"):
#   - 4 KiB random reads of an O_DIRECT file at iodepth 32, one endpoint,
#     the server on one poller core: serve --ioengine psync (pread on the
#     poller, the path rdp-blk had before io_uring) against --ioengine
#     io_uring;
#   - fio --ioengine=io_uring --direct=1 on the same file, locally, the
#     ceiling of what the disk gives one core;
#   - 4 KiB random reads on the memory device (IOPS and p99), for reference;
#   - 1 MiB sequential reads of the memory device at iodepth 8, the blocks
#     in rendezvous messages (--rdma-min off) and one-sided (--rdma-min 0:
#     the server RDMA-WRITEs them into the loader's registered buffers),
#     one-sided again over the device's first 1 MiB only (--size 1m, the
#     working set of rdp-perf's WRITE), against rdp-perf -m write at 1 MiB
#     (one-sided WRITE bandwidth).
# Rounds interleave the subjects (psync, io_uring, fio, memory) so that a
# change of the machine's state hits all of them; the report gives each
# subject's median over the rounds and the ratios of the medians.
#
#   devtools/bench/blk.sh [--rounds N] [--runtime S] [--size SIZE] [--bin-dir DIR]
#                         [--dir DIR] [--smoke] [--json FILE]
#
# --bin-dir: a build tree with apps/rdp-blk (default: build-bench).
# --dir: where the test file goes (default: $TMPDIR, else /var/tmp; a file
# system that takes O_DIRECT). --smoke: one round of 1 s on a 64 MiB file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rounds=3
runtime=5
size=1G
bin_dir=$top/build-bench
dir=${TMPDIR:-/var/tmp}
json=
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--size) size=$2; shift ;;
	--bin-dir) bin_dir=$2; shift ;;
	--dir) dir=$2; shift ;;
	--json) json=$2; shift ;;
	--smoke) rounds=1; runtime=1; size=64M ;;
	*) echo "usage: $0 [--rounds N] [--runtime S] [--size SIZE] [--bin-dir DIR] [--dir DIR] [--smoke] [--json FILE]" >&2
	   exit 2 ;;
	esac
	shift
done
blk=$bin_dir/apps/rdp-blk/rdp-blk
probe=$bin_dir/devtools/bench/probe-memcpy
for b in "$blk" "$probe"; do
	[ -x "$b" ] || { echo "blk.sh: no $b (build it: meson setup $bin_dir && ninja -C $bin_dir)" >&2; exit 1; }
done
server_cpu=$(($(nproc) > 1 ? 1 : 0))
command -v fio >/dev/null || { echo "blk.sh: fio not found (devtools/deps.sh bench)" >&2; exit 77; }

work=$(mktemp -d "$dir/rdp-blk-bench-XXXXXX")
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
file=$work/disk.img
# written once, so that reads hit allocated blocks (not holes the file system answers itself)
fio --name=fill --filename="$file" --size="$size" --rw=write --bs=1m --direct=1 \
	--ioengine=psync --output=/dev/null

# rdp_run ENGINE|memory OUT.json [LOAD ARGS]: one server, one loader (default 4 KiB randread qd 32)
rdp_run() {
	local what=$1 out=$2 port= dev
	shift 2
	local wl=("$@")
	[ ${#wl[@]} -gt 0 ] || wl=(--rw randread --bs 4k --iodepth 32)
	if [ "$what" = memory ]; then dev=(--memory 1G); else dev=(--file "$file" --ioengine "$what"); fi
	: >"$work/serve.log"
	"$blk" -- serve "${dev[@]}" --listen 127.0.0.1:0 >"$work/serve.log" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/serve.log")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { cat "$work/serve.log" >&2; exit 1; }
	"$blk" -- load --connect 127.0.0.1:$port "${wl[@]}" \
		--runtime "$runtime" --output-format=json --output "$out" >"$work/load.log" 2>&1 ||
		{ cat "$work/load.log" "$work/serve.log" >&2; exit 1; }
	kill "$srv"; wait "$srv" || true; srv=
}

results=$work/results.jsonl
: >"$results"
add() {	# add ROUND SUBJECT FILE.json: one line of $results
	python3 -c 'import json, sys; print(json.dumps({"round": int(sys.argv[1]), "subject": sys.argv[2], "file": json.load(open(sys.argv[3]))}))' \
		"$1" "$2" "$3" >>"$results"
}
for r in $(seq "$rounds"); do
	for e in psync io_uring; do
		rdp_run "$e" "$work/$e.json"
		add "$r" "rdp-blk $e" "$work/$e.json"
	done
	# the ceiling: fio alone on one core (the server's), same file, depth, block size
	taskset -c "$server_cpu" fio --name=ceiling --filename="$file" --size="$size" \
		--rw=randread --bs=4k --iodepth=32 --ioengine=io_uring --direct=1 \
		--runtime="$runtime" --time_based --output-format=json --output="$work/fio.json"
	add "$r" "fio io_uring" "$work/fio.json"
	rdp_run memory "$work/memory.json"
	add "$r" "rdp-blk memory" "$work/memory.json"
	rdp_run memory "$work/seq.json" --rw read --bs 1m --iodepth 8 --rdma-min off
	add "$r" "rdp-blk 1m read" "$work/seq.json"
	rdp_run memory "$work/seq1.json" --rw read --bs 1m --iodepth 8 --rdma-min 0
	add "$r" "rdp-blk 1m 1-sided" "$work/seq1.json"
	# the same over the device's first 1 MiB: the working set of rdp-perf's
	# WRITE, which copies one buffer into one
	rdp_run memory "$work/seq1w.json" --rw read --bs 1m --iodepth 8 --rdma-min 0 --size 1m
	add "$r" "rdp-blk 1m 1-sided 1m" "$work/seq1w.json"
	# a run in which no WRITE completed (a machine crowded by other work, such
	# as the rxe guest beside the test command's bench lane) measures
	# nothing: up to three tries
	for _ in 1 2 3; do
		timeout 120 "$bin_dir/apps/rdp-perf/rdp-perf" -- -q -m write -s 1048576 \
			-d "$runtime" 2>/dev/null |
			awk '$1 == "write" && $4 > 0 { print "{\"jobs\": [{\"read\": {\"iops\": " $4 ", \"bw_bytes\": " $4 * 1048576 ", \"clat_ns\": {\"percentile\": {}}}}]}" }' \
			>"$work/write.json"
		[ -s "$work/write.json" ] && break
		echo "blk.sh: rdp-perf -m write completed no WRITE; again" >&2
	done
	[ -s "$work/write.json" ] ||
		{ echo "blk.sh: rdp-perf -m write completed no WRITE in three tries" >&2; exit 1; }
	add "$r" "rdp-perf write 1m" "$work/write.json"
	# the ceiling of a one-sided 1 MiB read of the 1 GiB memory device on shm,
	# where the RDMA WRITE is the server's memcpy: one core copying 1 MiB
	# blocks in order out of 1 GiB into the loader's 8 rotating buffers
	"$probe" --cpu "$server_cpu" --size 1048576 --span $((1 << 30)) --dst-span $((8 << 20)) \
		--duration "$runtime" |
		python3 -c 'import json, sys; r = json.load(sys.stdin); print(json.dumps({"jobs": [{"read": {"iops": r["bytes_per_s"] / r["size"], "bw_bytes": r["bytes_per_s"], "clat_ns": {"percentile": {}}}}]}))' \
		>"$work/memcpy.json"
	add "$r" "memcpy 1m over 1G" "$work/memcpy.json"
done

python3 - "$results" "$json" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
subj = {}
for r in rows:
    rd = r['file']['jobs'][0]['read']
    p99 = rd['clat_ns']['percentile'].get('99.000000', 0)
    subj.setdefault(r['subject'], []).append((rd['iops'], p99))
med = {k: (statistics.median(i for i, _ in v), statistics.median(p for _, p in v))
       for k, v in subj.items()}
bw = {k: statistics.median(r['file']['jobs'][0]['read']['bw_bytes'] for r in rows
                           if r['subject'] == k) for k in subj}
print("%-22s %12s %10s %10s  (medians of %d rounds)" % ("subject", "IOPS", "p99 us", "MB/s",
                                                      len(rows) // len(subj)))
for k, (iops, p99) in med.items():
    print("%-22s %12.0f %10.1f %10.0f" % (k, iops, p99 / 1000, bw[k] / 1e6))
u, p, f = med['rdp-blk io_uring'][0], med['rdp-blk psync'][0], med['fio io_uring'][0]
seq = bw['rdp-blk 1m read'] / bw['rdp-perf write 1m']
seq1 = bw['rdp-blk 1m 1-sided'] / bw['rdp-perf write 1m']
seq1w = bw['rdp-blk 1m 1-sided 1m'] / bw['rdp-perf write 1m']
ceil = bw['rdp-blk 1m 1-sided'] / bw['memcpy 1m over 1G']
ceil_w = bw['memcpy 1m over 1G'] / bw['rdp-perf write 1m']
print("io_uring / psync: %.2fx   io_uring / fio ceiling: %.2f" % (u / p, u / f))
print("1 MiB reads / one-sided WRITE: %.2f in messages, %.2f one-sided, "
      "%.2f one-sided over 1 MiB of the device" % (seq, seq1, seq1w))
print("one-sided 1 MiB reads / one core's memcpy over 1 GiB: %.2f "
      "(that memcpy / one-sided WRITE: %.2f)" % (ceil, ceil_w))
if sys.argv[2]:
    json.dump({'medians': {k: {'iops': v[0], 'p99_ns': v[1], 'bw_bytes': bw[k]}
                           for k, v in med.items()},
               'io_uring_over_psync': u / p, 'io_uring_over_fio': u / f,
               'seq_read_over_onesided_write': seq,
               'seq_read_onesided_over_onesided_write': seq1,
               'seq_read_onesided_1m_over_onesided_write': seq1w,
               'seq_read_onesided_over_memcpy_1g': ceil,
               'memcpy_1g_over_onesided_write': ceil_w},
              open(sys.argv[2], 'w'), indent=1)
EOF
