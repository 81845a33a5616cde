#!/bin/sh
# Inside the rxe lane's guest: rdp-blk as a user runs it across the wire, a
# memory server on rxe0 and verified loads from rxe1, two processes.
#
#   blk-pair.sh [rdp-blk load options...]
#
# One server serves every load. For each block size of BLK_SIZES (default
# "4k 1m") a load runs twice, its data in the messages (--rdma-min off)
# and one-sided (--rdma-min 0: the server RDMA-WRITEs reads into, and
# RDMA-READs writes from, the loader's registered buffers), each with
# --verify and the options given. Environment: BLK_CFG, lines of the
# [global] section both sides load (default: a 1 s transport timeout as
# docs/rxe-lane.md advises for rxe in a VM, pollers that sleep when idle,
# 20 s handshakes).
# Every load must exit 0 having read and checked blocks with 0 mismatches;
# the server must exit 0 on SIGINT, having refused nothing and failed no
# one-sided operation.
# Exit status: 0 when all of that holds, 1 otherwise.
# shellcheck disable=SC2086 # $eal: EAL's options, a list of words
work=$(mktemp -d)
cfg=$work/blk-pair.ini
printf '[global]\n%b\n' "${BLK_CFG:-timeout = 18\nidle_sleep_us = 20\nhandshake_timeout_ms = 20000\nhello_timeout_ms = 20000\nconnect_timeout_ms = 20000}" > $cfg
eal="-l 0-1 --no-huge --no-pci"
port=18700
t=0
rdp-blk $eal --file-prefix blk-srv -- serve --memory 64M --listen 127.0.0.1:$port -c $cfg \
	--driver verbs:device=rxe0 > "$work/srv.out" 2>&1 &
srv=$!
until awk -v p="$(printf '%04X' $port)" '$2 ~ ":"p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
	/proc/net/tcp; do
	t=$((t + 1))
	[ $t -gt 200 ] && break
	sleep 0.1
done
failed=0
for bs in ${BLK_SIZES:-4k 1m}; do
	for rm in off 0; do
		rdp-blk $eal --file-prefix blk-load -- load --connect 127.0.0.1:$port -c $cfg \
			--driver verbs:device=rxe1 --bs $bs --rdma-min $rm --verify "$@" \
			> "$work/load.out" 2>&1
		rc=$?
		verdict=ok
		[ $rc = 0 ] || verdict="exit $rc"
		grep -q '^verify: [1-9][0-9]* blocks read and checked.* 0 mismatches' "$work/load.out" ||
			verdict="$verdict, no clean verify line"
		echo "blk-pair --bs $bs --rdma-min $rm: $verdict; $(grep '^total' "$work/load.out" |
			awk '{ printf "%s IOPS, p50 %s us", $3, $6 }')"
		if [ "$verdict" != ok ]; then
			failed=$((failed + 1))
			sed 's/^/  load| /' "$work/load.out"
		fi
	done
done
kill -INT $srv
wait $srv
src=$?
tail -2 "$work/srv.out" | sed 's/^/  /'
grep -q ' 0 refused, 0 I/O errors' "$work/srv.out" || { echo "blk-pair: the server refused requests"; failed=$((failed + 1)); }
grep -q 'one-sided: .* 0 failed' "$work/srv.out" || { echo "blk-pair: one-sided operations failed"; failed=$((failed + 1)); }
[ $src = 0 ] || { echo "blk-pair: server exit $src"; sed 's/^/  server| /' "$work/srv.out"; failed=$((failed + 1)); }
echo "blk-pair: $failed failures: $*"
rm -rf "$work"
[ $failed = 0 ]
