#!/usr/bin/env bash
# The install test (meson suite "install"): install a build into a scratch
# directory, then build and run a program against it the way a user would,
# with nothing but `pkg-config --cflags --libs librdmaplane`.
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
diff -u want.txt out.txt >&2 || fail "unexpected output from the consumer"
echo "ok: installed headers, library and librdmaplane.pc build and run a program"
