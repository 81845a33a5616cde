#!/usr/bin/env bash
# Build rdmaplane and run the whole test suite: the README's second command
# and the only thing CI runs. The last line is "N passed, N failed[, N skipped]".
#
# Lanes (each a meson build directory; a lane that cannot run here says why
# and counts as skipped):
#   build-test   gcc, every suite but valgrind, huge, bench and model (the soak
#                runs $RDP_SOAK_SECONDS, 40, and half as long on a shared receive
#                queue)
#   build-asan   clang with ASan+UBSan (and LeakSanitizer): unit, shm, e2e with fewer
#                messages per stream, and the soaks for 20 s and 10 s
#   build-tsan   clang with ThreadSanitizer: suites race (lcore handoffs,
#                pollers, both modes' streams), e2e and shm with fewer
#                messages, and the soaks for 20 s and 10 s
#                (both sanitizer lanes leave out suite volume)
#   valgrind     memcheck over build-test: a two-process stream, no error, no
#                definite leak
#   huge         build-test's suite huge: it reserves hugepages (root) and
#                checks in smaps that pools sit on them, rdp-perf's two
#                processes included; gives them back
#   build-rxe    build-test's binaries on real Soft-RoCE in a qemu guest
#                (devtools/rxe-vm.sh; counted as skipped where qemu cannot run)
#   bench        build-test's suite bench: the benchmark scripts' smoke runs
#   model        build-test's suite model: the spin model checks
#   build-fuzz   clang with libFuzzer: each target for $RDP_FUZZ_SECONDS (20)
# The last four run at once: the guest's emulated CPUs take most of the two
# cores; the benchmark smoke runs, which assert nothing about speed, share
# them; the model checks and fuzzers, which only compute and time nothing,
# use what the others leave (SCHED_IDLE). Every lane before them busy-polls
# pinned lcores and runs alone.
# Each lane's wall time is printed. Options: --quick (build-test only),
# --suite S (restrict lanes to S), --soak SECONDS (a longer soak).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

quick=0
only=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--suite) only+=(--suite "$2"); shift ;;
	--soak) export RDP_SOAK_SECONDS=$2; shift ;;
	*) echo "usage: $0 [--quick] [--suite S]... [--soak SECONDS]" >&2; exit 2 ;;
	esac
	shift
done

devtools/deps.sh test

logs=()
times=()
run_lane() {	# run_lane DIR LOGBASE SETUP-ARGS -- TEST-ARGS
	local dir=$1 base=$2 t0=$SECONDS name=$1
	shift 2
	[ "$base" = lane ] || name=$dir:$base
	local setup=()
	while [ "$1" != -- ]; do setup+=("$1"); shift; done
	shift
	echo "=== lane $name"
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "${setup[@]}" >"$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log"; times+=("$name: setup failed"); return 1; }
	fi
	ninja -C "$dir" >"$dir.build.log" 2>&1 ||
		{ tail -50 "$dir.build.log"; times+=("$name: build failed"); return 1; }
	meson test -C "$dir" --no-rebuild --print-errorlogs --logbase "$base" "$@" || true
	logs+=("$dir/meson-logs/$base.json")
	times+=("$name $((SECONDS - t0)) s")
}

skip_lane() {	# skip_lane NAME REASON
	echo "=== lane $1: skipped ($2)"
	logs+=("skip:$1:$2")
	times+=("$1: skipped")
}

# Suites valgrind, huge and model have lanes of their own below (with
# --quick or --suite, model runs here); a longer soak a longer timeout.
main_args=(--no-suite valgrind --no-suite huge)
[ $quick = 1 ] || main_args+=(--no-suite model --no-suite bench)
# with --suite, this lane runs just those (model included)
[ ${#only[@]} -gt 0 ] && main_args=("${only[@]}")
if [ -n "${RDP_SOAK_SECONDS:-}" ]; then
	main_args+=(--timeout-multiplier $(( (RDP_SOAK_SECONDS + 240) / 240 )))
fi
RDP_SOAK_SECONDS=${RDP_SOAK_SECONDS:-40} run_lane build-test lane -- "${main_args[@]}" || true

want() {	# want SUITE: is SUITE among --suite, or was none given?
	[ ${#only[@]} -eq 0 ] && return 0
	local s
	for s in "${only[@]}"; do [ "$s" = "$1" ] && return 0; done
	return 1
}

if [ $quick = 0 ]; then
	if ! command -v clang >/dev/null; then
		for l in build-asan build-tsan build-fuzz; do skip_lane "$l" "clang not found"; done
	else
		if want unit || want shm || want e2e || want soak; then
			asan_suites=(--suite unit --suite shm --suite e2e --suite soak --no-suite volume)
			[ ${#only[@]} -gt 0 ] && asan_suites=("${only[@]}")
			RDP_E2E_COUNT=${RDP_E2E_COUNT:-30000} RDP_SOAK_SECONDS=20 \
			ASAN_OPTIONS=abort_on_error=1 \
			CC=clang run_lane build-asan lane -Dsanitize=true -Db_lundef=false -- \
				"${asan_suites[@]}" || true
		fi
		if want race || want e2e || want shm || want soak; then
			tsan_suites=(--suite race --suite e2e --suite shm --suite soak --no-suite volume)
			[ ${#only[@]} -gt 0 ] && tsan_suites=("${only[@]}")
			RDP_E2E_COUNT=${RDP_E2E_COUNT:-3000} RDP_SOAK_SECONDS=20 \
			TSAN_OPTIONS="suppressions=$top/devtools/tsan.supp halt_on_error=1 exitcode=66 atexit_sleep_ms=0" \
			CC=clang run_lane build-tsan lane -Dtsan=true -Db_lundef=false -- \
				"${tsan_suites[@]}" || true
		fi
	fi
	if want valgrind; then
		if command -v valgrind >/dev/null; then
			run_lane build-test valgrind -- --suite valgrind || true
		else
			skip_lane valgrind "valgrind not found"
		fi
	fi
	if want huge; then
		run_lane build-test huge -- --suite huge || true
	fi
fi

# The rxe guest in the background; beside it, niced, what only computes.
rxe_pid=
if [ $quick = 0 ] && want rxe; then
	rxe_t0=$SECONDS
	echo "=== lane build-rxe (in the background; its output follows the model and fuzz lanes)"
	devtools/rxe-vm.sh -B build-test -w build-rxe >build-rxe.lane.log 2>&1 &
	rxe_pid=$!
fi
# the benchmark scripts' smoke runs beside the guest, sharing the CPUs
# (they assert nothing about speed)
if [ $quick = 0 ] && [ ${#only[@]} -eq 0 ]; then
	run_lane build-test bench -- --suite bench || true
fi
# from here on this script and what it starts run only on CPU time the
# guest leaves (SCHED_IDLE; nice 19 where chrt cannot)
if [ $quick = 0 ]; then
	chrt --idle -p 0 $$ >/dev/null 2>&1 || renice -n 19 -p $$ >/dev/null
fi
if [ $quick = 0 ] && [ ${#only[@]} -eq 0 ]; then
	run_lane build-test model -- --suite model || true
fi
if [ $quick = 0 ] && want fuzz && command -v clang >/dev/null; then
	RDP_FUZZ_SECONDS=${RDP_FUZZ_SECONDS:-20} CC=clang \
		run_lane build-fuzz lane -Dfuzz=true -Dtests=false -Db_lundef=false -- \
		--suite fuzz || true
fi
if [ -n "$rxe_pid" ]; then
	wait "$rxe_pid" || true
	echo "=== lane build-rxe"
	cat build-rxe.lane.log
	logs+=(build-rxe/rxe-vm.json)
	times+=("build-rxe $((SECONDS - rxe_t0)) s")
fi

echo "lane wall times: $(IFS=,; echo "${times[*]}" | sed 's/,/, /g')"
python3 devtools/test_summary.py "${logs[@]}"
