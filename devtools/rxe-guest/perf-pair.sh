#!/bin/sh
# Inside the rxe lane's guest: rdp-perf as a user runs it across the wire,
# a server on rxe0 and a client on rxe1, two processes, RUNS times.
#
#   perf-pair.sh RUNS [rdp-perf client options...]
#
# Environment: PERF_CFG, lines of the [global] section both sides load
# (default: rnr_retry = 0 so that an RNR is fatal, a 1 s transport timeout
# as docs/rxe-lane.md advises for rxe in a VM, pollers that sleep when
# idle, 20 s handshakes).
# The server gets --max-msg of the largest -s.
# Each run's JSON must show every phase measured with no exactly-once
# violation (seq_errors), ENOMEM 0 and RNR 0; both processes must exit 0;
# the client's closes must reach the server as closes ("closed by the
# peer"), with no endpoint failed there.
# rxe's hw_counters that moved during a run are printed after it: they
# show how much the wire lost and RC retransmitted.
# Exit status: 0 when every run passed, 1 otherwise.
runs=${1:?usage: perf-pair.sh RUNS [client options]}
shift
cfg=/tmp/perf-pair.ini
printf '[global]\n%b\n' "${PERF_CFG:-rnr_retry = 0\ntimeout = 18\nidle_sleep_us = 20\nhandshake_timeout_ms = 20000\nhello_timeout_ms = 20000\nconnect_timeout_ms = 20000}" > $cfg
port=18515
counters() {	# counters FILE: every rxe hw counter, "dev/name value"
	for d in /sys/class/infiniband/rxe*; do
		for c in $d/ports/1/hw_counters/*; do
			echo "${d##*/}/${c##*/} $(cat $c)"
		done
	done > "$1"
}
moved() {	# moved BEFORE AFTER: the counters that changed, one line
	awk 'NR == FNR { b[$1] = $2; next } $2 != b[$1] { printf " %s +%d", $1, $2 - b[$1] }' "$1" "$2"
}
# the phases asked for: every one must be in the JSON
want=0
modes=lat,bw sizes=65536,4096,64 n=0
set -- "$@"
args="$*"
prev=
for a in "$@"; do
	case $prev in -m|--mode) modes=$a ;; -s|--sizes) sizes=$a ;; esac
	prev=$a
done
want=$(( $(echo "$modes" | tr ',' '\n' | grep -c .) * $(echo "$sizes" | tr ',' '\n' | grep -c .) ))
# the server accepts messages of the client's largest -s (rendezvous beyond 1 MiB)
largest=$(echo "$sizes" | tr ',' '\n' | sort -n | tail -1)
failed=0
i=1
while [ $i -le "$runs" ]; do
	port=$((port + 1))
	counters /tmp/hw.before
	rm -f /tmp/perf.json
	rdp-perf -l 0-1 --no-huge --no-pci --file-prefix srv$i -- --server --quiet \
		--listen 127.0.0.1:$port -c $cfg --driver verbs:device=rxe0 --max-msg "$largest" \
		> /tmp/srv.out 2>&1 &
	srv=$!
	# the server listens once it has started its driver
	t=0
	until grep -q . /proc/net/tcp 2>/dev/null && awk -v p=$(printf '%04X' $port) \
		'$2 ~ ":"p"$" && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp; do
		t=$((t + 1))
		[ $t -gt 200 ] && break
		sleep 0.1
	done
	start=$(cut -d' ' -f1 /proc/uptime)
	rdp-perf -l 0-1 --no-huge --no-pci --file-prefix cli$i -- --connect 127.0.0.1:$port \
		-c $cfg --driver verbs:device=rxe1 -q --json /tmp/perf.json "$@" > /tmp/cli.out 2>&1
	crc=$?
	end=$(cut -d' ' -f1 /proc/uptime)
	# the client closed every endpoint: each must reach the server as a close
	t=0
	while ! grep -q 'closed by the peer' /tmp/srv.out && [ $t -lt 50 ]; do
		t=$((t + 1))
		sleep 0.1
	done
	sleep 0.2
	kill -TERM $srv 2>/dev/null
	wait $srv
	src=$?
	counters /tmp/hw.after
	phases=$(grep -c '"mode"' /tmp/perf.json 2>/dev/null)
	bad=$(grep -o '"\(seq_errors\|enomem\|rnr\)": [1-9][0-9]*' /tmp/perf.json 2>/dev/null | sort | uniq -c | tr '\n' ' ')
	verdict=ok
	[ "$crc" = 0 ] || verdict="client exit $crc"
	[ "$src" = 0 ] || verdict="$verdict, server exit $src"
	[ "${phases:-0}" = "$want" ] || verdict="$verdict, $phases of $want phases"
	[ -z "$bad" ] || verdict="$verdict, $bad"
	closes=$(grep -c 'closed by the peer' /tmp/srv.out)
	fails=$(grep -c 'endpoint [0-9]* (peer .*) failed' /tmp/srv.out)
	[ "$crc" != 0 ] || [ "$closes" -gt 0 ] || verdict="$verdict, no close reached the server"
	[ "$crc" != 0 ] || [ "$fails" = 0 ] || verdict="$verdict, $fails endpoints failed at the server"
	echo "perf-pair run $i/$runs: $verdict in $(awk -v a=$start -v b=$end 'BEGIN { printf "%.1f", b - a }') s;$(moved /tmp/hw.before /tmp/hw.after)"
	if [ "$verdict" != ok ]; then
		failed=$((failed + 1))
		sed 's/^/  client| /' /tmp/cli.out
		sed 's/^/  server| /' /tmp/srv.out
	else
		grep -o '"mode": "[a-z]*", "size": [0-9]*\|"msg_rate": [0-9.]*' /tmp/perf.json |
			paste -d' ' - - | sed 's/"//g; s/^/  /'
	fi
	i=$((i + 1))
done
echo "perf-pair: $((runs - failed)) of $runs runs clean: $args"
[ $failed = 0 ]
