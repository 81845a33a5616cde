#!/usr/bin/env bash
# Install the Debian 12 packages a task needs, only those missing.
# Usage: devtools/deps.sh build|test|bench
# (test: man-db and groff-base render the man pages; libsystemd-dev is what
# DPDK's static list, `pkg-config --static`, names as -lsystemd; fio is what
# the bench lane's smoke run of blk.sh compares rdp-blk with.)
set -euo pipefail

build_pkgs="gcc libc6-dev meson ninja-build pkg-config python3 dpdk-dev libdpdk-dev
            libibverbs-dev libnuma-dev libbsd-dev libsodium-dev liburing-dev"
test_pkgs="$build_pkgs clang llvm libclang-rt-14-dev spin valgrind qemu-system-x86
           busybox-static cpio kmod xz-utils iproute2 rdma-core ibverbs-providers
           ibverbs-utils ucx-utils libfabric-bin linux-perf man-db groff-base
           libsystemd-dev fio"
bench_pkgs="$build_pkgs ucx-utils libfabric-bin valgrind linux-perf fio"

case "${1:-}" in
build) want=$build_pkgs ;;
test) want=$test_pkgs ;;
bench) want=$bench_pkgs ;;
*) echo "usage: $0 build|test|bench" >&2; exit 2 ;;
esac

missing=()
for p in $want; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt="apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends"
"${sudo[@]}" $apt update >/dev/null
"${sudo[@]}" $apt install "${missing[@]}" >/dev/null
