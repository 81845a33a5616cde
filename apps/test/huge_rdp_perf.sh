#!/usr/bin/env bash
# Suite huge, end to end: rdp-perf server and client as two processes, EAL
# on hugepages (--in-memory: no hugetlbfs mount needed), 4 endpoints, lat
# and bw at 64 B and 4 KiB, rnr_retry = 0. While both run, every pool
# mapping of each process (the shm driver's memfds of at least 1 MiB: its
# own pools and regions, and the peer's it maps) is looked up in
# /proc/PID/smaps:
#   hugepages = auto, enough reserved  every one on 2 MiB pages
#   hugepages = off                    every one on base pages (the check sees them)
#   hugepages = auto, too few          runs, pools that missed out warn with the counts
#   hugepages = on, too few            the server refuses to start, naming pool and counts
#   a loopback run on hugepages        its server's pools on 2 MiB pages too
# The JSON of each run that starts has ENOMEM = RNR = 0 in every phase. The
# test reserves the hugepages itself and gives them back.
set -uo pipefail

perf=${RDP_PERF_BIN:?run through meson test (RDP_PERF_BIN)}
nr=/proc/sys/vm/nr_hugepages

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

{ [ "$(id -u)" -eq 0 ] && [ -w $nr ]; } || skip "reserving hugepages needs root ($nr)"
grep -q '^Hugepagesize: *2048 kB' /proc/meminfo || skip "the default hugepage is not 2 MiB"

old=$(cat $nr)
dir=$(mktemp -d -t rdp-huge-XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	echo "$old" > $nr
	rm -rf "$dir"
}
trap cleanup EXIT

free_pages() { awk '/^HugePages_Free/ { f = $2 } /^HugePages_Rsvd/ { r = $2 } END { print f - r }' /proc/meminfo; }

reserve() {
	echo "$1" > $nr
	[ "$(free_pages)" -ge "$1" ] || skip "asked for $1 free hugepages, the kernel has $(free_pages)"
}

# "HUGE BASE": pool mappings (rdp-shm-mr memfds of >= 1 MiB) of PID on 2 MiB and on base pages
pool_pages() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6 }
	     /^Size:/ { size = $2 }
	     /^KernelPageSize:/ { if (name ~ /rdp-shm-mr/ && size >= 1024) { if ($2 == 2048) h++; else b++ } }
	     END { print h + 0, b + 0 }' "/proc/$1/smaps"
}

eal=(--in-memory --no-pci --no-telemetry --log-level=lib.eal:error)

# run_pair NAME CONFIG MODES: a server and a client with CONFIG; sets
# srv_pages, cli_pages (the last sample while both ran) and cli_rc.
run_pair() {
	local name=$1 cfg=$dir/$1.ini port="" srv cli i s c
	printf '%s\n' "$2" > "$cfg"
	"$perf" --lcores 0@0,1@1 "${eal[@]}" -- -c "$cfg" --server --listen 127.0.0.1:0 \
		> "$dir/$name.srv.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	for i in $(seq 100); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$dir/$name.srv.log")
		[ -n "$port" ] && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$port" ]; then
		wait "$srv"
		srv_rc=$?
		return 1
	fi
	"$perf" --lcores 0@1,1@0 "${eal[@]}" -- -c "$cfg" --connect "127.0.0.1:$port" -e 4 \
		-m "$3" -s 64,4096 -d 1 -q --json "$dir/$name.json" > "$dir/$name.cli.log" 2>&1 &
	cli=$!
	pids+=("$cli")
	srv_pages="0 0"
	cli_pages="0 0"
	# sample until each process maps at least 12 pools (its 8 and the peer's
	# receive pools), then once more
	for i in $(seq 100); do
		s=$(pool_pages "$srv" 2>/dev/null) && c=$(pool_pages "$cli" 2>/dev/null) || break
		srv_pages=$s
		cli_pages=$c
		read -r sh sb <<< "$s"
		read -r ch cb <<< "$c"
		if [ $((sh + sb)) -ge 12 ] && [ $((ch + cb)) -ge 12 ]; then
			sleep 0.3
			srv_pages=$(pool_pages "$srv" 2>/dev/null || echo "$s")
			cli_pages=$(pool_pages "$cli" 2>/dev/null || echo "$c")
			break
		fi
		sleep 0.1
	done
	wait "$cli"
	cli_rc=$?
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	echo "$name: pool mappings on hugepages / on base pages: server $srv_pages, client $cli_pages"
	return 0
}

# check_json NAME PHASES: every phase ran, ENOMEM = RNR = 0
check_json() {
	python3 - "$dir/$1.json" "$2" <<'EOF' || fail "$1: $(cat "$dir/$1.cli.log")"
import json, sys
r = json.load(open(sys.argv[1]))
res = r["results"]
assert len(res) == int(sys.argv[2]), f"{len(res)} phases, want {sys.argv[2]}"
for p in res:
    assert p["messages"] > 0, p
    assert p["credit"]["enomem"] == 0 and p["credit"]["rnr"] == 0, p
EOF
}

base_cfg=$'[global]\ndriver = shm\nrnr_retry = 0'

# 1. auto, enough hugepages: every pool mapping on hugepages
reserve 96
run_pair auto "$base_cfg"$'\nhugepages = auto' lat,bw || fail "server: $(cat "$dir/auto.srv.log")"
[ "$cli_rc" -eq 0 ] || fail "client exit $cli_rc: $(cat "$dir/auto.cli.log")"
check_json auto 4
read -r sh sb <<< "$srv_pages"
read -r ch cb <<< "$cli_pages"
[ "$sh" -ge 12 ] && [ "$sb" -eq 0 ] || fail "server pools: $sh on hugepages, $sb on base pages"
[ "$ch" -ge 12 ] && [ "$cb" -eq 0 ] || fail "client pools: $ch on hugepages, $cb on base pages"
! grep -q "on base pages" "$dir/auto.srv.log" "$dir/auto.cli.log" || fail "a pool missed out"

# 2. off: the same check sees base pages
run_pair off "$base_cfg"$'\nhugepages = off' bw || fail "server: $(cat "$dir/off.srv.log")"
[ "$cli_rc" -eq 0 ] || fail "client exit $cli_rc: $(cat "$dir/off.cli.log")"
check_json off 2
read -r sh sb <<< "$srv_pages"
read -r ch cb <<< "$cli_pages"
[ "$sh" -eq 0 ] && [ "$sb" -ge 12 ] || fail "off: server pools $sh on hugepages, $sb on base pages"
[ "$ch" -eq 0 ] && [ "$cb" -ge 12 ] || fail "off: client pools $ch on hugepages, $cb on base pages"

# 3. auto, too few for both processes: it runs, and what missed out says so
reserve 40
run_pair short "$base_cfg"$'\nhugepages = auto' bw || fail "server: $(cat "$dir/short.srv.log")"
[ "$cli_rc" -eq 0 ] || fail "client exit $cli_rc: $(cat "$dir/short.cli.log")"
check_json short 2
grep -hE "rdp.mem: (pool|arena|rdp_region_alloc).*on base pages: hugepages short, it needs [0-9]+ x 2048 KiB, [0-9]+ free" \
	"$dir/short.srv.log" "$dir/short.cli.log" | head -3
grep -qE "on base pages: hugepages short, it needs [0-9]+ x 2048 KiB" "$dir/short.srv.log" \
	"$dir/short.cli.log" || fail "40 hugepages for two processes, and no pool missed out"

# 4. a loopback run (no --server, no --connect) with EAL on hugepages: the
# server it starts runs on hugepages too
reserve 96
printf '%s\n' "$base_cfg"$'\nhugepages = auto' > "$dir/loop.ini"
"$perf" --lcores 0@1,1@0 "${eal[@]}" -- -c "$dir/loop.ini" -e 4 -m bw -s 4096 -d 2 -q \
	--json "$dir/loop.json" > "$dir/loop.cli.log" 2>&1 &
cli=$!
pids+=("$cli")
srv_pages="0 0"
for i in $(seq 100); do
	srv=$(pgrep -P "$cli" | head -1)
	if [ -n "$srv" ]; then
		s=$(pool_pages "$srv" 2>/dev/null) || break
		srv_pages=$s
		read -r sh sb <<< "$s"
		[ $((sh + sb)) -ge 12 ] && break
	fi
	sleep 0.1
done
wait "$cli" || fail "loopback client: $(cat "$dir/loop.cli.log")"
check_json loop 1
echo "loopback: the server's pool mappings on hugepages / on base pages: $srv_pages"
read -r sh sb <<< "$srv_pages"
[ "$sh" -ge 12 ] && [ "$sb" -eq 0 ] || fail "loopback server pools: $sh on hugepages, $sb on base pages"

# 5. on, too few: refused at start, naming the pool and the counts
reserve 8
if run_pair on "$base_cfg"$'\nhugepages = on' bw; then
	fail "hugepages = on started with 8 hugepages: $(cat "$dir/on.srv.log")"
fi
[ "$srv_rc" -ne 0 ] || fail "the server exited 0"
grep -E "pool tx_lcore1: cannot register 4096 x 8192 bytes: 33554432 bytes on hugepages: it needs 16 x 2048 KiB, [0-9] free" \
	"$dir/on.srv.log" || fail "no clear error: $(cat "$dir/on.srv.log")"

echo "$old" > $nr
[ "$(cat $nr)" -eq "$old" ] || fail "nr_hugepages not given back"
echo "ok: hugepages given back ($old reserved, as before)"
