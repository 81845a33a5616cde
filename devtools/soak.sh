#!/usr/bin/env bash
# A long soak: the test command runs it for 60 s, this for as long as asked.
# Usage: devtools/soak.sh [SECONDS [SEED]]   (default 600 s, a seed from the clock)
# It prints the ledger at the end; a seed printed by a failed run replays
# the same choices of faults (their timing still varies).
set -euo pipefail
cd "$(dirname "$0")/.."

export RDP_SOAK_SECONDS=${1:-600}
[ $# -ge 2 ] && export RDP_SOAK_SEED=$2

devtools/deps.sh build
[ -f build-test/build.ninja ] || meson setup build-test >/dev/null
ninja -C build-test >/dev/null
exec build-test/apps/test/rdp-test soak_under_faults_every_message_delivered_once_or_reported_failed
