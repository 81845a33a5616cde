#!/usr/bin/env bash
# Long fuzzing runs (the test command runs each target for 30 s only).
# Usage: devtools/fuzz.sh [-t SECONDS] [TARGET...]
#   TARGET: hello, cfg, frame (default: all, one after the other).
# Builds build-fuzz (clang, -Dfuzz=true). New corpus inputs stay in
# build-fuzz/apps/fuzz/work/TARGET/corpus; keep the interesting ones in
# apps/fuzz/corpus/TARGET/ (after `fuzz-TARGET -merge=1`), and every crash
# in apps/fuzz/regress/TARGET/, where it becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=600
while getopts t: o; do
	case $o in
	t) secs=$OPTARG ;;
	*) echo "usage: $0 [-t SECONDS] [hello|cfg|frame]..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(hello cfg frame)

devtools/deps.sh test
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false -Db_lundef=false >/dev/null
fi
ninja -C build-fuzz >/dev/null

rc=0
for t in "${targets[@]}"; do
	inputs=("apps/fuzz/corpus/$t")
	[ -d "apps/fuzz/regress/$t" ] && inputs+=("apps/fuzz/regress/$t")
	RDP_FUZZ_SECONDS=$secs apps/fuzz/run_fuzzer.sh "build-fuzz/apps/fuzz/fuzz-$t" "$t" \
		"build-fuzz/apps/fuzz/work/$t" "${inputs[@]}" || rc=1
done
exit $rc
