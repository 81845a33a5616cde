#!/usr/bin/env bash
# The install test (meson suite "install"): install a build into a scratch
# directory, then build and run a program against it the way a user would,
# with nothing but `pkg-config --cflags --libs librdmaplane`; then link the
# same program to the installed librdmaplane.a with `pkg-config --static`
# and check that it holds the library (and its drivers) itself.
#
# Usage: devtools/test_install.sh BUILD_DIR CONSUMER.c
# Environment: CC (the build's compiler), CONSUMER_CFLAGS (sanitizer flags of
# the build, which a program linking it needs too).
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdp-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

fail() { echo "FAIL: $*" >&2; exit 1; }

meson install -C "$build" --no-rebuild --destdir "$root" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install --destdir failed"; }

read -r prefix libdir < <(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
opts = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(opts["prefix"], opts["libdir"])')
case $libdir in
/*) ;;
*) libdir=$prefix/$libdir ;;
esac

# The installed .pc file says prefix=$prefix, but this copy lives under
# $root$prefix: point it there. (pkg-config --define-variable=prefix would
# also move the prefix of libdpdk.pc and the other required packages.)
pcfile=$root$libdir/pkgconfig/librdmaplane.pc
[ -f "$pcfile" ] || fail "meson install put no librdmaplane.pc in $root$libdir/pkgconfig"
grep -q "^prefix=$prefix\$" "$pcfile" || fail "$pcfile does not start from prefix=$prefix"
sed -i "s|^prefix=.*|prefix=$root$prefix|" "$pcfile"
export PKG_CONFIG_PATH=$root$libdir/pkgconfig
pc=(pkg-config librdmaplane)
"${pc[@]}" --exists || fail "pkg-config finds no librdmaplane in $PKG_CONFIG_PATH"
case $("${pc[@]}" --variable=includedir) in
"$root"/*) ;;
*) fail "pkg-config resolved librdmaplane outside the scratch install" ;;
esac

cd "$tmp"
# shellcheck disable=SC2046,SC2086 # pkg-config output is a list of words
${CC:-cc} ${CONSUMER_CFLAGS:-} -o consumer "$src" $("${pc[@]}" --cflags) $("${pc[@]}" --libs) ||
	fail "the consumer does not build from the pkg-config flags"

cat >good.ini <<'INI'
[global]
rq_size = 512
ack_reserve = 32
[lcore.1]
sq_size = 128
INI
printf '[global]\nring_size = 1000\n' >bad.ini

LD_LIBRARY_PATH=$root$libdir ./consumer good.ini bad.ini >out.txt ||
	{ cat out.txt >&2; fail "the consumer failed"; }
version=$(meson introspect "$build" --projectinfo | python3 -c '
import json, sys
print(json.load(sys.stdin)["version"])')
cat >want.txt <<WANT
library: $root$libdir/librdmaplane.so.${version%%.*}
version: $version
lcore 1: sq_size=128 rq_size=512 credit check 0
bad.ini:2: [global] ring_size = 1000: must be a power of two in [64, 1048576]
WANT
# the drivers register from constructors; both must have run
drivers=$(sed -n 5p out.txt)
case $drivers in
"unknown driver 'nosuch' (built-in drivers: "*shm*")") ;;
*) fail "the consumer lists no shm driver: $drivers" ;;
esac
printf '%s\n' "$drivers" >>want.txt
diff -u want.txt out.txt >&2 || fail "unexpected output from the consumer"
echo "ok: installed headers, library and librdmaplane.pc build and run a program"

# Static: librdmaplane.a and what `pkg-config --static` names. DPDK comes
# from its own static list (librte_*.a); the libraries Debian ships only as
# shared objects (libisal, libsystemd, glibc's libdl users) stay shared, so
# the link is librdmaplane.a and DPDK static, the rest dynamic: -Bstatic
# around -lrdmaplane makes sure the archive, not the .so beside it, is used.
archive=$root$libdir/librdmaplane.a
[ -f "$archive" ] || fail "meson install put no librdmaplane.a in $root$libdir"
static_libs=$("${pc[@]}" --static --libs) || fail "pkg-config --static --libs failed"
for want in -lrdmaplane -lsodium -lnuma -lbsd -pthread -l:librte_eal.a -l:librte_ring.a \
	    -l:librte_cfgfile.a -l:librte_telemetry.a; do
	case " $static_libs " in
	*" $want "*) ;;
	*) fail "pkg-config --static --libs librdmaplane does not name $want" ;;
	esac
done
if grep -q '^#define RDP_HAVE_VERBS 1' "$("${pc[@]}" --variable=includedir)/rdmaplane/rdp_build_config.h"; then
	case " $static_libs " in
	*" -libverbs "*) ;;
	*) fail "pkg-config --static --libs librdmaplane does not name -libverbs (verbs driver built)" ;;
	esac
fi
# shellcheck disable=SC2001 # one word replaced in a list
static_libs=$(sed 's/ -lrdmaplane / -Wl,-Bstatic -lrdmaplane -Wl,-Bdynamic /' <<<" $static_libs ")
# shellcheck disable=SC2046,SC2086 # pkg-config output is a list of words
${CC:-cc} ${CONSUMER_CFLAGS:-} -o consumer-static "$src" $("${pc[@]}" --cflags) $static_libs \
	>static.log 2>&1 || { tail -30 static.log >&2; fail "the consumer does not link statically"; }
if command -v readelf >/dev/null; then
	readelf -d consumer-static | grep -q 'NEEDED.*librdmaplane' &&
		fail "consumer-static still needs librdmaplane.so"
fi
"$tmp/consumer-static" good.ini bad.ini >out-static.txt ||
	{ cat out-static.txt >&2; fail "the static consumer failed"; }
# the library's code is in the program itself; the rest says the same
sed "1s|.*|library: $tmp/consumer-static|" want.txt >want-static.txt
diff -u want-static.txt out-static.txt >&2 || fail "unexpected output from the static consumer"
echo "ok: pkg-config --static links librdmaplane.a into a program that runs"
