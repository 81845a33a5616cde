#!/bin/sh
# Inside the rxe lane's guest: run a command while the wire loses and
# reorders packets, both ways.
#
#   netem.sh COMMAND...
#
# Each NIC gets `$tc qdisc ... netem` with $NETEM (default: 1 % loss, and a
# quarter of the packets sent at once while the rest wait 2 ms, so they
# arrive out of order). RC must hide both: the command's own checks (an
# exactly-once stream, rdp-perf's numbered messages) still pass. The
# qdiscs' counters are printed after it: a run where netem dropped nothing
# proves nothing and fails.
# Exit status: the command's, or 1 when netem dropped or reordered nothing.
tc=/usr/sbin/tc	# iproute2's, not busybox's applet
netem=${NETEM:-loss 1% delay 2ms reorder 25% 50%}
for ifc in $RXE_IF_A $RXE_IF_B; do
	$tc qdisc add dev "$ifc" root netem $netem || { echo "netem.sh: tc on $ifc failed"; exit 1; }
done
"$@"
rc=$?
dropped=0
for ifc in $RXE_IF_A $RXE_IF_B; do
	stats=$($tc -s qdisc show dev "$ifc" | tr '\n' ' ')
	echo "netem.sh: $ifc: $stats"
	d=$(echo "$stats" | sed -n 's/.*dropped \([0-9]*\).*/\1/p')
	dropped=$((dropped + ${d:-0}))
	$tc qdisc del dev "$ifc" root
done
echo "netem.sh: $netem: $dropped packets dropped, command exit $rc"
[ "$dropped" -gt 0 ] || { echo "netem.sh: netem dropped nothing"; exit 1; }
exit $rc
