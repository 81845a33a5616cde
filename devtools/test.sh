#!/usr/bin/env bash
# Build rdmaplane and run the whole test suite: the README's second command
# and the only thing CI runs. The last line is "N passed, N failed[, N skipped]".
#
# Lanes (each a meson build directory):
#   build-test   gcc, every suite
#   build-asan   clang with ASan+UBSan, the suites that exercise memory
#   build-rxe    build-test's binaries on real Soft-RoCE in a qemu guest
#                (devtools/rxe-vm.sh; counted as skipped where qemu cannot run)
# Options: --quick (skip the sanitizer lane), --suite S (restrict lanes to S)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

quick=0
only=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--suite) only+=(--suite "$2"); shift ;;
	*) echo "usage: $0 [--quick] [--suite S]..." >&2; exit 2 ;;
	esac
	shift
done

devtools/deps.sh test

logs=()
run_lane() {	# run_lane DIR SETUP-ARGS -- TEST-ARGS
	local dir=$1; shift
	local setup=()
	while [ "$1" != -- ]; do setup+=("$1"); shift; done
	shift
	echo "=== lane $dir"
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "${setup[@]}" >"$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log"; return 1; }
	fi
	ninja -C "$dir" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; return 1; }
	meson test -C "$dir" --no-rebuild --print-errorlogs --logbase lane "$@" || true
	logs+=("$dir/meson-logs/lane.json")
}

run_lane build-test -- ${only[@]+"${only[@]}"}
if [ $quick = 0 ]; then
	asan_suites=(--suite unit --suite shm --suite e2e)
	[ ${#only[@]} -gt 0 ] && asan_suites=("${only[@]}")
	CC=clang run_lane build-asan -Dsanitize=true -Db_lundef=false -- "${asan_suites[@]}"
fi

if [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" rxe "* ]]; then
	echo "=== lane build-rxe"
	devtools/rxe-vm.sh -B build-test -w build-rxe || true
	logs+=(build-rxe/rxe-vm.json)
fi

python3 devtools/test_summary.py "${logs[@]}"
