#!/bin/sh
# Inside the rxe lane's guest: rdp-blk's 1 MiB sequential reads, one-sided
# (the server RDMA-WRITEs each block into the loader's registered buffer),
# against rdp-perf's one-sided WRITE bandwidth at 1 MiB, on real verbs, in
# ROUNDS rounds that run the two one after the other (docs/rdp-blk.md,
# "Performance"). The WRITEs go the same way in both: rdp-blk's server on
# rxe0 writes into its loader on rxe1, and rdp-perf's client on rxe0 into
# its server on rxe1. A benchmark, not a test: it asserts nothing about
# speed.
#
#   blk-vs-write.sh [ROUNDS [SECONDS]]
#
# Prints each round's MB/s of both and their ratio, then the median ratio.
# Exit status: 0 when every run measured something, 1 otherwise.
# shellcheck disable=SC2086 # $eal: EAL's options, a list of words
rounds=${1:-2}
secs=${2:-10}
work=$(mktemp -d)
cfg=$work/blk-vs-write.ini
printf '[global]\nrnr_retry = 0\ntimeout = 18\nidle_sleep_us = 20\nhandshake_timeout_ms = 20000\nhello_timeout_ms = 20000\nconnect_timeout_ms = 20000\n' > $cfg
eal="-l 0-1 --no-huge --no-pci"
port=18900
listening() {	# listening PORT: a TCP listener on PORT, within 20 s
	t=0
	until awk -v p="$(printf '%04X' "$1")" '$2 ~ ":"p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
		/proc/net/tcp; do
		t=$((t + 1))
		[ $t -gt 200 ] && return 1
		sleep 0.1
	done
}
ratios=
failed=0
r=1
while [ $r -le "$rounds" ]; do
	port=$((port + 1))
	rdp-perf $eal --file-prefix bw-srv$r -- --server --quiet --listen 127.0.0.1:$port -c $cfg \
		--driver verbs:device=rxe1 --max-msg 1048576 > "$work/bw-srv.out" 2>&1 &
	srv=$!
	listening $port
	# MB/s: operations a second times 1 MiB
	write=$(rdp-perf $eal --file-prefix bw-cli$r -- --connect 127.0.0.1:$port -c $cfg \
		--driver verbs:device=rxe0 -q -m write -s 1048576 -d "$secs" 2>/dev/null |
		awk '$1 == "write" { printf "%.1f", $4 * 1048576 / 1e6 }')
	kill -INT $srv 2>/dev/null
	wait $srv
	port=$((port + 1))
	rdp-blk $eal --file-prefix blk-srv$r -- serve -c $cfg --driver verbs:device=rxe0 \
		--memory 256M --listen 127.0.0.1:$port > "$work/blk-srv.out" 2>&1 &
	srv=$!
	listening $port
	read=$(rdp-blk $eal --file-prefix blk-cli$r -- load -c $cfg --driver verbs:device=rxe1 \
		--connect 127.0.0.1:$port --rw read --bs 1m --iodepth 8 --rdma-min 0 \
		--runtime "$secs" 2>/dev/null | awk '$1 == "read" && NF == 9 { print $4 }')
	kill -INT $srv 2>/dev/null
	wait $srv
	if [ -z "$write" ] || [ -z "$read" ] || [ "$write" = 0.0 ]; then
		echo "blk-vs-write round $r: nothing measured (write '$write' MB/s, read '$read' MB/s)"
		failed=$((failed + 1))
	else
		ratio=$(awk -v a="$read" -v b="$write" 'BEGIN { printf "%.2f", a / b }')
		ratios="$ratios $ratio"
		echo "blk-vs-write round $r: rdp-blk 1 MiB one-sided reads $read MB/s," \
			"rdp-perf 1 MiB WRITE $write MB/s: $ratio"
	fi
	r=$((r + 1))
done
[ -n "$ratios" ] && echo "blk-vs-write: median ratio $(echo $ratios | tr ' ' '\n' | sort -n |
	awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" \
	"over $((rounds - failed)) rounds"
rm -rf "$work"
[ $failed = 0 ]
