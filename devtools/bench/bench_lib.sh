# devtools/bench: shell functions the bench scripts share (sourced, not run).

# bench_default_cpus: "A,B", the first two CPUs this process may use (A,A on one CPU)
bench_default_cpus() {
	python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print("%d,%d" % (c[0], c[1 if len(c) > 1 else 0]))'
}

# bench_wait_listen PORT [PID]: until something listens on TCP PORT (at most
# 30 s: a server may be slow to start on a loaded machine); fails early when
# PID, the server that should listen, is gone
bench_wait_listen() {
	local _
	for _ in $(seq 300); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		[ -z "${2:-}" ] || kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# bench_eal CPU PREFIX: EAL arguments for a process whose two lcores (main
# and poller) share one CPU; the file prefix is made unique with the shell's pid
bench_eal() {
	echo "--lcores 0@$1,1@$1 --no-huge --no-pci --no-shconf -m 512 --file-prefix $2-$$ \
--log-level=lib.eal:error --no-telemetry"
}
