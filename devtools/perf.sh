#!/usr/bin/env bash
# Build rdmaplane and run the messaging benchmark: the README's first command.
# rdp-perf in loopback (server and client as two processes, one pinned poller
# lcore each) on the embedded default driver (verbs with an active RDMA port,
# else shm). Extra arguments go to rdp-perf after its '--', e.g.
#   devtools/perf.sh -m lat -s 64 -d 5
set -euo pipefail
cd "$(dirname "$0")/.."

devtools/deps.sh build
if [ ! -f build-release/build.ninja ]; then
	meson setup build-release --buildtype=release -Dtests=false >build-release.setup.log 2>&1 ||
		{ cat build-release.setup.log; exit 1; }
fi
ninja -C build-release >build-release.build.log 2>&1 || { tail -50 build-release.build.log; exit 1; }
exec build-release/apps/rdp-perf/rdp-perf -- "$@"
