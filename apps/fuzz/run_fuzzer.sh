#!/usr/bin/env bash
# Run one libFuzzer target for a bounded time (a test of suite fuzz).
# Usage: run_fuzzer.sh BINARY NAME WORKDIR INPUT_DIR...
#   RDP_FUZZ_SECONDS (default 30): how long.
# New inputs go to WORKDIR/corpus, never into the source tree. A crash
# fails the test and names the reproducer; keep it in apps/fuzz/regress/NAME/.
set -uo pipefail
bin=$1 name=$2 work=$3
shift 3
secs=${RDP_FUZZ_SECONDS:-30}
mkdir -p "$work/corpus" "$work/artifacts"
log=$work/last.log
dict=()
[ -f "$(dirname "$0")/$name.dict" ] && dict=(-dict="$(dirname "$0")/$name.dict")

"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	${dict[@]+"${dict[@]}"} -artifact_prefix="$work/artifacts/" "$work/corpus" "$@" >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
corpus=$(find "$work/corpus" -type f | wc -l)
if [ $rc -ne 0 ]; then
	tail -60 "$log"
	crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	echo "fuzz $name: FAILED (status $rc)${execs:+ after $execs executions}"
	if [ -n "$crash" ]; then
		echo "reproducer: $crash"
		echo "reproduce:  $bin $crash"
		echo "then keep it: cp $crash apps/fuzz/regress/$name/ (a regression test from then on)"
	fi
	exit 1
fi
echo "fuzz $name: ${execs:-?} executions in $secs s, $corpus new corpus inputs, no crash"
