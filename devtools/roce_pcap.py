#!/usr/bin/env python3
"""Read RoCE v2 traffic from a pcap (devtools/rxe-vm.sh with RXE_VM_PCAP).

    roce_pcap.py FILE.pcap                  summary: packets per opcode, NAKs
    roce_pcap.py FILE.pcap --naks N         and the packets of each of the first
                                            N NAKs' connection around it
    roce_pcap.py FILE.pcap --qp QPN         every packet to or from one QP

Only the headers are read (Ethernet, IPv4, UDP port 4791, BTH, AETH), so a
capture cut to 80 bytes a frame is enough. A connection is the pair
(requests to the responder's QP, acknowledgements to the requester's QP);
the acknowledgements are matched to their requests by the addresses and
the PSN they carry.
"""
import argparse
import collections
import struct
import sys

ROCE_PORT = 4791
OPCODES = {
    0x00: 'SEND_FIRST', 0x01: 'SEND_MIDDLE', 0x02: 'SEND_LAST', 0x03: 'SEND_LAST_IMM',
    0x04: 'SEND_ONLY', 0x05: 'SEND_ONLY_IMM', 0x06: 'WRITE_FIRST', 0x07: 'WRITE_MIDDLE',
    0x08: 'WRITE_LAST', 0x09: 'WRITE_LAST_IMM', 0x0a: 'WRITE_ONLY', 0x0b: 'WRITE_ONLY_IMM',
    0x0c: 'READ_REQUEST', 0x0d: 'READ_RESP_FIRST', 0x0e: 'READ_RESP_MIDDLE',
    0x0f: 'READ_RESP_LAST', 0x10: 'READ_RESP_ONLY', 0x11: 'ACK', 0x12: 'ATOMIC_ACK',
    0x13: 'CMP_SWAP', 0x14: 'FETCH_ADD',
}
NAK_CODES = {0: 'PSN sequence error', 1: 'invalid request', 2: 'remote access error',
             3: 'remote operational error', 4: 'invalid RD request'}
HAS_AETH = {0x0d, 0x0f, 0x10, 0x11, 0x12}
HAS_IMM = {0x03, 0x05}  # SEND_LAST_IMM, SEND_ONLY_IMM: ImmDt right after the BTH


class Pkt:
    __slots__ = ('n', 't', 'src', 'dst', 'op', 'qp', 'psn', 'ackreq', 'syn', 'msn', 'paylen',
                 'imm')

    def describe(self):
        op = OPCODES.get(self.op, '0x%02x' % self.op)
        s = '#%-8d %12.6f %s -> %s %-16s qp 0x%06x psn %8d' % (
            self.n, self.t, self.src, self.dst, op, self.qp, self.psn)
        if self.ackreq:
            s += ' A'
        if self.syn is not None:
            s += ' ' + aeth_text(self.syn) + ' msn %d' % self.msn
        if self.imm is not None:
            s += ' imm 0x%08x' % self.imm
        return s


def aeth_text(syn):
    kind = syn >> 5
    if kind == 0:
        return 'ACK'
    if kind == 1:
        return 'RNR-NAK'
    if kind == 3:
        return 'NAK(%s)' % NAK_CODES.get(syn & 0x1f, syn & 0x1f)
    return 'AETH 0x%02x' % syn


def is_nak(p):
    return p.syn is not None and (p.syn >> 5) in (1, 3)


def read(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack_from('<I', data, 0)[0]
    if magic in (0xa1b2c3d4, 0xa1b23c4d):
        end = '<'
    elif magic in (0xd4c3b2a1, 0x4d3cb2a1):
        end = '>'
    else:
        sys.exit('%s: not a pcap file' % path)
    nano = magic in (0xa1b23c4d, 0x4d3cb2a1)
    off, n, out = 24, 0, []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from(end + 'IIII', data, off)
        off += 16
        frame = data[off:off + incl]
        off += incl
        n += 1
        p = parse(frame)
        if p is None:
            continue
        p.n = n
        p.t = sec + frac / (1e9 if nano else 1e6)
        out.append(p)
    return out


def parse(fr):
    if len(fr) < 14 + 20 + 8 + 12 or fr[12:14] != b'\x08\x00':
        return None
    ihl = (fr[14] & 0xf) * 4
    if fr[14 + 9] != 17:
        return None
    udp = 14 + ihl
    if len(fr) < udp + 8 + 12 or struct.unpack_from('>H', fr, udp + 2)[0] != ROCE_PORT:
        return None
    ip_len = struct.unpack_from('>H', fr, 16)[0]
    bth = udp + 8
    p = Pkt()
    p.src = '.'.join(str(b) for b in fr[26:30])
    p.dst = '.'.join(str(b) for b in fr[30:34])
    p.op = fr[bth]
    p.qp = int.from_bytes(fr[bth + 5:bth + 8], 'big')
    p.ackreq = bool(fr[bth + 8] & 0x80)
    p.psn = int.from_bytes(fr[bth + 9:bth + 12], 'big')
    p.syn = p.msn = p.imm = None
    if p.op in HAS_IMM and len(fr) >= bth + 16:
        p.imm = struct.unpack_from('>I', fr, bth + 12)[0]
    if p.op in HAS_AETH and len(fr) >= bth + 16:
        p.syn = fr[bth + 12]
        p.msn = int.from_bytes(fr[bth + 13:bth + 16], 'big')
    p.paylen = ip_len - ihl - 8 - 12
    return p


def connection(pkts, i):
    """The requests a NAK (pkts[i]) answers: their destination QP."""
    nak = pkts[i]
    for j in range(i - 1, max(-1, i - 5000), -1):
        q = pkts[j]
        if q.src == nak.dst and q.dst == nak.src and q.op not in HAS_AETH and \
                abs(q.psn - nak.psn) < 64:
            return q.qp
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('pcap')
    ap.add_argument('--naks', type=int, default=0, metavar='N')
    ap.add_argument('--before', type=int, default=40, metavar='K',
                    help='packets of the connection shown before a NAK (40)')
    ap.add_argument('--qp', type=lambda v: int(v, 0))
    a = ap.parse_args()
    pkts = read(a.pcap)
    if a.qp is not None:
        for p in pkts:
            if p.qp == a.qp:
                print(p.describe())
        return
    ops = collections.Counter(OPCODES.get(p.op, hex(p.op)) for p in pkts)
    naks = [i for i, p in enumerate(pkts) if is_nak(p)]
    print('%d RoCE packets: %s' % (len(pkts), ', '.join('%s %d' % kv for kv in ops.most_common())))
    kinds = collections.Counter(aeth_text(pkts[i].syn) for i in naks)
    print('%d NAKs: %s' % (len(naks), ', '.join('%s %d' % kv for kv in kinds.most_common()) or '-'))
    shown = 0
    for i in naks:
        if shown >= a.naks:
            break
        if (pkts[i].syn >> 5) != 3 or (pkts[i].syn & 0x1f) == 0:
            continue  # PSN sequence errors are ordinary go-back-N; show the rest
        shown += 1
        nak = pkts[i]
        req_qp = connection(pkts, i)
        print('\n%s\n  requests to qp %s, acknowledgements to qp 0x%06x:' % (
            nak.describe(), 'unknown' if req_qp is None else '0x%06x' % req_qp, nak.qp))
        ctx = [p for p in pkts[max(0, i - 20000):i + 200]
               if (p.qp == req_qp and p.src == nak.dst) or (p.qp == nak.qp and p.src == nak.src)]
        k = ctx.index(nak)
        for p in ctx[max(0, k - a.before):k + 10]:
            print('  ' + p.describe())


if __name__ == '__main__':
    main()
