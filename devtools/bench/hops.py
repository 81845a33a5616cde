#!/usr/bin/env python3
"""Line up the stamps of a hop-trace run (devtools/bench/hops.sh).

hops.py CLIENT.hop SERVER.hop [--json FILE]

Each file holds one process's TSC stamps per stage (lib/common/private/rdp_hop.h).
A hop is one message: published by one side, reaped by the other, which
then polls, dispatches and delivers it, and sends and publishes its reply.
The k-th data entry one side publishes is the k-th the other reaps, which
gives the transfer; the receiver's own stages follow each reap in time.
Exits 1 when a stage has no samples (the smoke test relies on it).
"""
import argparse
import bisect
import json
import statistics
import struct
import sys

POINTS = ["reaped", "polled", "dispatched", "deliver", "app_send", "publish", "visible"]
CHAIN = POINTS[:6]           # the receiver's path, reap to its reply's publication
SKIP = 0.2                   # warm-up left out
OUTLIER_NS = 100000.0        # a stage this long was descheduled: the hop is left out


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"RDPHOP1\n":
        sys.exit("hops.py: %s is not a hop-trace file" % path)
    nb, hz = struct.unpack_from("<IQ", data, 8)
    off = 20
    counts = struct.unpack_from("<%dI" % nb, data, off)
    off += 4 * nb
    stamps = []
    for c in counts:
        stamps.append(struct.unpack_from("<%dQ" % c, data, off))
        off += 8 * c
    return dict(zip(POINTS, stamps)), hz


def hop(sender, receiver, hz):
    """Stages of the hops from sender to receiver, in ns: lists per stage."""
    ns = 1e9 / hz
    pub, rea = sender["publish"], receiver["reaped"]
    n = min(len(pub), len(rea))
    out = {"transfer": []}
    for a, b in zip(CHAIN, CHAIN[1:]):
        out[a + "->" + b] = []
    out["total"] = []
    out["publish->visible"] = []
    negative = 0
    for k in range(int(n * SKIP), n):
        transfer = (rea[k] - pub[k]) * ns
        if transfer < 0:
            negative += 1
            continue
        t, vals = rea[k], []
        for a, b in zip(CHAIN, CHAIN[1:]):
            arr = receiver[b]
            i = bisect.bisect_left(arr, t)
            if i == len(arr):
                break
            vals.append((arr[i] - t) * ns)
            t = arr[i]
        if len(vals) != len(CHAIN) - 1 or max(vals + [transfer]) > OUTLIER_NS:
            continue
        vis = receiver["visible"]
        i = bisect.bisect_left(vis, t)
        out["transfer"].append(transfer)
        for (a, b), v in zip(zip(CHAIN, CHAIN[1:]), vals):
            out[a + "->" + b].append(v)
        if i < len(vis):
            out["publish->visible"].append((vis[i] - t) * ns)
        out["total"].append(transfer + sum(vals))
    return out, negative, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("client")
    ap.add_argument("server")
    ap.add_argument("--json")
    args = ap.parse_args()
    cli, hz = load(args.client)
    srv, hz_s = load(args.server)
    if hz != hz_s:
        sys.exit("hops.py: the two files disagree on the TSC rate")
    result, bad = {}, []
    for name, s, r in (("client->server", cli, srv), ("server->client", srv, cli)):
        stages, negative, n = hop(s, r, hz)
        result[name] = {k: {"p50_ns": statistics.median(v) if v else None,
                            "mean_ns": statistics.fmean(v) if v else None,
                            "samples": len(v)} for k, v in stages.items()}
        result[name]["_hops_seen"] = n
        result[name]["_negative_transfers"] = negative
        bad += [name + " " + k for k, v in stages.items() if not v]
    names = list(result["client->server"].keys())
    print("%-22s %16s %16s" % ("stage (p50, ns)", "client->server", "server->client"))
    for k in names:
        if k.startswith("_"):
            continue
        row = [result[h][k]["p50_ns"] for h in ("client->server", "server->client")]
        print("%-22s %16s %16s" % (k, *("%.1f" % v if v is not None else "-" for v in row)))
    for h in ("client->server", "server->client"):
        print("%s: %d hops, %d used, %d with a negative transfer (TSCs apart?)" % (
            h, result[h]["_hops_seen"], result[h]["total"]["samples"],
            result[h]["_negative_transfers"]))
    print("publish->visible is the sender's stores draining after its stamp; the hop's "
          "path goes on from publish on the other side")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tsc_hz": hz, "hops": result}, f, indent=1)
    if bad:
        print("hops.py: no samples for: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
