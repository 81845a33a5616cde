#!/usr/bin/env bash
# The rxe lane: run test commands on real Soft-RoCE (rdma_rxe) inside a qemu
# guest, and bring their results back as meson-style JSON lines.
#
#   devtools/rxe-vm.sh [-B BUILD] [-w WORK] [-l LIST] [-c 'NAME CMD']... [-o FILE]
#
#   -B BUILD   meson build directory holding apps/test/rdp-test (build-test)
#   -w WORK    lane directory: kernel cache, guest root, logs (build-rxe)
#   -l LIST    file of guest commands, `NAME COMMAND...` per line
#              (devtools/rxe-lane.list)
#   -c 'N C'   run this command instead of the list (repeatable)
#   -o FILE    results, one JSON object per test (WORK/rxe-vm.json)
#   -t SECS    deadline of the whole boot (720; the lane takes ~190 s on an idle
#              2-core host, much longer when other work shares the CPUs)
#
# What it does, on a Debian 12 host: installs what is missing (deps.sh
# test), downloads Debian's kernel package with `apt-get download` into
# WORK/cache (never installs it), unpacks vmlinux for a PVH boot, builds an
# initramfs (busybox, the project's binaries and their ldd closure, the rxe
# provider, the kernel modules in dependency order), boots it under TCG with
# two virtio NICs on one qemu hub, brings up rxe0 and rxe1, runs the
# commands and parses the serial console. Paths are relative to the
# repository; nothing outside WORK is written except apt's own state.
#
# Exit status: 0 all passed, 1 something failed, 77 the lane was skipped
# (qemu or the kernel cannot be had here; the results file says why).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
cd "$top"

build=build-test
work=build-rxe
list=devtools/rxe-lane.list
cmds=()
results=
deadline=720
while getopts B:w:l:c:o:t:h opt; do
	case $opt in
	B) build=$OPTARG ;;
	w) work=$OPTARG ;;
	l) list=$OPTARG ;;
	c) cmds+=("$OPTARG") ;;
	o) results=$OPTARG ;;
	t) deadline=$OPTARG ;;
	*) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
	esac
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
results=${results:-$work/rxe-vm.json}
cache=$work/cache
root=$work/root
console=$work/console.log
smp=${RXE_VM_SMP:-2}
mem=${RXE_VM_MEM:-1024}
# A host thread per vCPU (multi-threaded TCG): faster than one thread for
# both vCPUs (single), even on a 2-core host.
tcg_thread=${RXE_VM_TCG_THREAD:-multi}

t_start=$(date +%s.%N)
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "rxe-vm: $*"; }

# One SKIP entry, said loudly: only for "qemu or the kernel cannot be had here".
skip_lane() {
	say "############################################################"
	say "SKIPPED: $*"
	say "############################################################"
	python3 - "$results" "$*" <<'EOF'
import json, sys
with open(sys.argv[1], 'w') as f:
    f.write(json.dumps({'name': 'rxe-vm / lane', 'result': 'SKIP',
                        'stdout': 'skipped: ' + sys.argv[2]}) + '\n')
EOF
	exit 77
}

fail_lane() {
	say "FAILED: $*"
	python3 - "$results" "$*" <<'EOF'
import json, sys
with open(sys.argv[1], 'w') as f:
    f.write(json.dumps({'name': 'rxe-vm / lane', 'result': 'FAIL',
                        'stdout': sys.argv[2]}) + '\n')
EOF
	exit 1
}
rm -f "$results"

# ---- 1. host packages ------------------------------------------------------
"$here/deps.sh" test || say "deps.sh could not install everything; going on with what is here"
qemu=${RXE_VM_QEMU:-qemu-system-x86_64}
qemu=$(command -v "$qemu") || skip_lane "${RXE_VM_QEMU:-qemu-system-x86_64} is not installed"
"$qemu" -version >/dev/null 2>&1 || skip_lane "$qemu does not run here"
for tool in busybox cpio modinfo python3 dpkg-deb; do
	command -v "$tool" >/dev/null || skip_lane "$tool is not installed"
done
say "host packages ready at $(elapsed) s"

# ---- 2. the project's binaries ---------------------------------------------
rdp_test=$build/apps/test/rdp-test
[ -x "$rdp_test" ] || fail_lane "$rdp_test is not built (run the build-test lane first)"
[ -n "$(ls "$build"/librdmaplane.so* 2>/dev/null)" ] || fail_lane "no librdmaplane.so in $build"
"$rdp_test" --list >/dev/null || fail_lane "$rdp_test does not run on the host"

# ---- 3. Debian's kernel, unpacked in the cache -----------------------------
mkdir -p "$cache"
# The kernel package linux-image-amd64 points at, e.g. linux-image-6.1.0-57-amd64.
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}
kpkg=$(kernel_pkg || true)
if [ -z "$kpkg" ]; then
	apt-get -q update >/dev/null 2>&1 || true
	kpkg=$(kernel_pkg || true)
fi
[ -n "$kpkg" ] || skip_lane "apt knows no linux-image-amd64 package"
kver=${kpkg#linux-image-}
kdir=$cache/$kpkg
want_mods="virtio_pci virtio_net crc32_generic rdma_rxe sch_netem"

# Modules and what they depend on, dependencies first, from a tree in $1.
declare -A mod_seen=()
mod_order=()
mod_add() {	# mod_add TREE NAME
	local tree=$1 name=${2//-/_} path dep
	[ -n "${mod_seen[$name]:-}" ] && return 0
	mod_seen[$name]=1
	path=$(awk -v want="$name" '{ n = $0; sub(/.*\//, "", n); sub(/\.ko.*$/, "", n)
		gsub(/-/, "_", n); if (n == want) { print; exit } }' "$tree/modules.order")
	if [ -z "$path" ]; then
		grep -q "/$name.ko" "$tree/modules.builtin" && return 0
		fail_lane "kernel module $name is not in $kpkg"
	fi
	for dep in $(modinfo -F depends "$tree/$path" | tr , ' '); do
		mod_add "$tree" "$dep"
	done
	cp "$tree/$path" "$kdir/mod/$name.ko"
	mod_order+=("$name")
}

if [ "$(cat "$kdir/ready" 2>/dev/null)" != "$want_mods" ]; then
	# one kernel in the cache: the one apt points at now
	find "$cache" -mindepth 1 -maxdepth 1 ! -name "${kpkg}_*.deb" -exec rm -rf {} +
	mkdir -p "$kdir/mod"
	if ! ls "$cache/${kpkg}"_*.deb >/dev/null 2>&1; then
		say "downloading $kpkg"
		download() { (cd "$cache" && apt-get -q -o APT::Sandbox::User=root download "$kpkg"); }
		if ! download; then
			# a stale package list names a version the mirror no longer has
			apt-get -q update >/dev/null 2>&1 || true
			kpkg=$(kernel_pkg || true)
			kver=${kpkg#linux-image-}
			rm -rf "$kdir"
			kdir=$cache/$kpkg
			mkdir -p "$kdir/mod"
			[ -n "$kpkg" ] && download || skip_lane "cannot download the kernel package $kpkg"
		fi
	fi
	tree=$(mktemp -d "$cache/unpack.XXXXXX")
	trap 'rm -rf "$tree"' EXIT
	dpkg-deb -x "$cache/${kpkg}"_*.deb "$tree"
	cp "$tree/boot/vmlinuz-$kver" "$kdir/vmlinuz"
	for m in $want_mods; do mod_add "$tree/lib/modules/$kver" "$m"; done
	printf '%s\n' "${mod_order[@]}" > "$kdir/modules"
	rm -rf "$tree"
	trap - EXIT
	# A bzImage decompresses itself at every boot, seconds under TCG: boot the
	# ELF inside it through its PVH entry instead.
	python3 - "$kdir/vmlinuz" "$kdir/vmlinux" <<'EOF' || say "no vmlinux inside; booting the bzImage"
import lzma, sys
data = open(sys.argv[1], 'rb').read()
at = data.find(b'\xfd7zXZ\x00')
if at < 0:
    sys.exit(1)
elf = lzma.LZMADecompressor().decompress(data[at:])
if elf[:4] != b'\x7fELF':
    sys.exit(1)
open(sys.argv[2], 'wb').write(elf)
EOF
	echo "$want_mods" > "$kdir/ready"
fi
kernel=$kdir/vmlinux
[ -s "$kernel" ] || kernel=$kdir/vmlinuz
say "kernel $kver ready at $(elapsed) s"

# ---- 4. the guest's root ---------------------------------------------------
rm -rf "$root"
mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{proc,sys,dev,tmp,run,etc/libibverbs.d} \
	"$root"/lane/{bin,lib}
for d in bin sbin lib lib64; do ln -s usr/$d "$root/$d"; done

# A file and the shared libraries it needs: system ones where they were,
# the project's own in /lane/lib.
add_elf() {	# add_elf SRC DST
	local src dst=$2 lib
	src=$(readlink -f "$1")
	mkdir -p "$root$(dirname "$dst")"
	cp "$src" "$root$dst"
	for lib in $(ldd "$src" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		case $lib in
		/lib/*|/lib64/*|/usr/lib/*|/usr/lib64/*) dst=$lib ;;
		*) dst=/lane/lib/$(basename "$lib") ;;
		esac
		[ -e "$root$dst" ] && continue
		mkdir -p "$root$(dirname "$dst")"
		cp "$(readlink -f "$lib")" "$root$dst"
	done
}
cp "$(command -v busybox)" "$root/usr/bin/busybox"
ln -s busybox "$root/usr/bin/sh"	# for system() and popen()
add_elf "$rdp_test" /lane/bin/rdp-test
for f in "$build"/apps/*/rdp-*; do
	[ -f "$f" ] && [ -x "$f" ] && [ "$f" != "$rdp_test" ] && add_elf "$f" "/lane/bin/$(basename "$f")"
done
[ -x "$build/rxe-retry-dup" ] && add_elf "$build/rxe-retry-dup" /lane/bin/rxe-retry-dup
# the lane's own guest scripts (devtools/rxe-guest)
for f in "$here"/rxe-guest/*.sh; do
	cp "$f" "$root/lane/bin/$(basename "$f")"
done
# glibc loads libgcc_s itself when a thread is cancelled (pthread_cancel):
# ldd does not list it, and without it a process aborts at exit
libgcc=$(readlink -f "$(gcc -print-file-name=libgcc_s.so.1)")
[ -f "$libgcc" ] || fail_lane "libgcc_s.so.1 not found (gcc -print-file-name)"
mkdir -p "$root$(dirname "$libgcc")"
cp "$libgcc" "$root$libgcc"
for tool in ip tc rdma ibv_devinfo; do
	p=$(command -v "$tool") || skip_lane "$tool is not installed"
	add_elf "$p" "/usr/sbin/$tool"
done
provider=$(dpkg -L ibverbs-providers 2>/dev/null | grep '/librxe-rdmav[0-9]*\.so$' | head -1 || true)
[ -n "$provider" ] || skip_lane "the rxe provider of libibverbs is not installed"
add_elf "$provider" "$provider"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
cp -r "$kdir/mod" "$kdir/modules" "$root/lane/"

# The commands, NAME<TAB>COMMAND.
if [ ${#cmds[@]} -eq 0 ]; then
	[ -f "$list" ] || fail_lane "no command list $list"
	mapfile -t cmds < <(grep -v '^[[:space:]]*\(#\|$\)' "$list")
fi
for c in "${cmds[@]}"; do
	read -r name cmd <<<"$c"
	[ -n "$cmd" ] || fail_lane "command line '$c' has a name and no command"
	printf '%s\t%s\n' "$name" "$cmd"
done > "$root/lane/commands"

cat > "$root/init" <<'EOF'
#!/bin/busybox sh
# PID 1 of the rxe lane's guest. Lines starting with "@@rxe" are read by the
# host; everything else is the tests' own output.
/bin/busybox mkdir -p /lane/bb
/bin/busybox --install -s /lane/bb
export PATH=/lane/bin:/usr/sbin:/usr/bin:/lane/bb LD_LIBRARY_PATH=/lane/lib HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /var && ln -s /run /var/run && mount -t tmpfs tmpfs /dev/shm
up() { cut -d' ' -f1 /proc/uptime; }
mark() { echo "@@rxe $*"; }
# busybox's shell runs its own applets before PATH: name iproute2's ip
ip=/usr/sbin/ip
arg() { sed -n "s/.*rxe_$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
# rxe_shell=1 on the kernel command line: a shell on the console (qemu.sh)
shell_if_asked() {
	[ "$(arg shell)" = 1 ] || return 0
	echo "rxe lane guest: exit the shell to go on"
	setsid cttyhack sh
}
must() { "$@" || give_up "$*"; }
give_up() {
	mark setup-failed "$*"
	$ip -br link; $ip -br addr; rdma link; dmesg | tail -20
	shell_if_asked
	poweroff -f
}

mark boot "$(up)"
for m in $(cat /lane/modules); do
	insmod /lane/mod/$m.ko || give_up "insmod $m"
done

# Two NICs on one qemu hub: the wire between the two "hosts".
ifa=; ifb=
for n in /sys/class/net/*; do
	case $(cat $n/address) in
	$(arg mac_a)) ifa=${n##*/} ;;
	$(arg mac_b)) ifb=${n##*/} ;;
	esac
done
[ -n "$ifa" ] && [ -n "$ifb" ] || give_up "virtio NICs not found"
ipa=$(arg ip_a); ipb=$(arg ip_b)
# Both addresses are local, so the kernel would deliver between them on lo.
# Route what this host sends to one address out of the other address's
# NIC, and accept on the far NIC what arrives from a local source. One
# `ip -batch`: every exec of a dynamic binary costs under TCG.
for c in all default $ifa $ifb; do
	echo 1 > /proc/sys/net/ipv4/conf/$c/accept_local
	echo 0 > /proc/sys/net/ipv4/conf/$c/rp_filter
done
cat > /tmp/wire.ip <<NET
link set lo up
addr add $ipa/32 dev $ifa
addr add $ipb/32 dev $ifb
rule add pref 1000 lookup local
rule del pref 0
rule add pref 100 iif lo to $ipb lookup 100
rule add pref 101 iif lo to $ipa lookup 101
NET
# what a link going down takes away, for the tests that take one down
cat > /lane/wire-up.ip <<NET
link set $ifa up
link set $ifb up
route replace $ipb dev $ifa src $ipa table 100
route replace $ipa dev $ifb src $ipb table 101
neigh replace $ipb lladdr $(arg mac_b) dev $ifa nud permanent
neigh replace $ipa lladdr $(arg mac_a) dev $ifb nud permanent
NET
must $ip -batch /tmp/wire.ip
must $ip -batch /lane/wire-up.ip

rdma link add rxe0 type rxe netdev $ifa || give_up "rdma link add rxe0"
rdma link add rxe1 type rxe netdev $ifb || give_up "rdma link add rxe1"
# the IPv4-mapped RoCE v2 GIDs appear a little after the links
for dev_ip in rxe0:$ipa rxe1:$ipb; do
	hex=$(echo ${dev_ip#*:} | awk -F. '{ printf "%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	n=0
	until grep -qs "ffff:$hex" /sys/class/infiniband/${dev_ip%%:*}/ports/1/gids/*; do
		n=$((n + 1))
		[ $n -gt 100 ] && give_up "no IPv4 GID on ${dev_ip%%:*} after 10 s"
		sleep 0.1
	done
done
rdma link
mark setup-ok "$(up)"
shell_if_asked

# the commands may look at the wire: RXE_IF_A carries rxe0, RXE_IF_B rxe1;
# RXE_WIRE_UP brings both links, routes and neighbours back
export RXE_IF_A=$ifa RXE_IF_B=$ifb RXE_WIRE_UP="$ip -batch /lane/wire-up.ip"
tab=$(printf '\t')
while IFS="$tab" read -r name cmd; do
	mark begin "$name" "$(up)"
	timeout "$(arg cmd_timeout)" sh -c "$cmd" </dev/null 2>&1
	mark end "$name" $? "$(up)"
done < /lane/commands
mark done "$(up)"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$work/initrd.cpio"
say "guest root ready at $(elapsed) s: $(du -sh "$work/initrd.cpio" | cut -f1), modules $(echo $(cat "$kdir/modules"))"

# ---- 5. boot under TCG ------------------------------------------------------
# Written out so that a person can boot the same guest by hand (docs/rxe-lane.md).
mac_a=52:54:00:72:78:0a
mac_b=52:54:00:72:78:0b
# RXE_VM_PCAP=DIR: what each NIC sends, as qemu's hub port sees it, in
# DIR/wire_a.pcap and DIR/wire_b.pcap (first 80 bytes of every frame:
# the RoCE headers; devtools/roce_pcap.py reads them)
pcap_args=
if [ -n "${RXE_VM_PCAP:-}" ]; then
	mkdir -p "$RXE_VM_PCAP"
	pcap_dir=$(cd "$RXE_VM_PCAP" && pwd)
	for w in wire_a wire_b; do
		pcap_args="$pcap_args -object filter-dump,id=dump_$w,netdev=$w,file=$pcap_dir/$w.pcap,maxlen=80"
	done
fi
# each command ends itself in time for the guest to report it
cmd_timeout=$((deadline > 40 ? deadline - 20 : deadline / 2))
cat > "$work/qemu.sh" <<EOF
#!/bin/sh
# no_timer_check: a slow TCG vCPU on a loaded host can fail the IO-APIC
# timer check and panic at boot.
# Boot the rxe lane's guest as devtools/rxe-vm.sh last built it. Extra
# arguments go to the kernel command line, e.g. rxe_shell=1 for a shell.
exec $qemu -M q35 -accel tcg,thread=$tcg_thread -cpu max -smp $smp -m $mem \\
	-nodefaults -display none -no-reboot -serial stdio \\
	-kernel $kernel -initrd $work/initrd.cpio \\
	-netdev hubport,id=wire_a,hubid=0 -device virtio-net-pci,netdev=wire_a,mac=$mac_a,rx_queue_size=1024 \\
	-netdev hubport,id=wire_b,hubid=0 -device virtio-net-pci,netdev=wire_b,mac=$mac_b,rx_queue_size=1024 $pcap_args \\
	-append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off no_timer_check rxe_mac_a=$mac_a \\
rxe_mac_b=$mac_b rxe_ip_a=10.77.0.1 rxe_ip_b=10.77.0.2 rxe_cmd_timeout=$cmd_timeout \$*"
EOF
chmod +x "$work/qemu.sh"
say "booting $smp vCPU(s) under TCG ($tcg_thread): $(wc -l < "$root/lane/commands") command(s), deadline $deadline s"
t_boot=$(date +%s.%N)
set +e
timeout -k 5 "$deadline" "$work/qemu.sh" </dev/null 2>&1 | tr -d '\r' | tee "$console" | sed -u 's/^/  vm| /'
qemu_rc=${PIPESTATUS[0]}
set -e
boot_s=$(awk -v a="$t_boot" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
say "qemu exited with $qemu_rc after $boot_s s (console: $console)"

# ---- 6. results -------------------------------------------------------------
set +e
python3 "$here/rxe_vm_results.py" "$console" "$results" "$qemu_rc"
rc=$?
set -e
say "lane done in $(elapsed) s (boot and tests $boot_s s)"
exit $rc
