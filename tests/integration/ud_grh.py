#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""UD receive completions as a ConnectX reports them, for every GID of a port.

For each populated GID index of DEVICE port 1 a UD datagram goes from one QP
to another over that GID (loopback on the port). The receiver checks what
UCX and other middleware read:
  - wc.sl carries the RoCE L3 header type (mlx5: 0 = GRH/RoCE v1,
    1 = IPv6, 2 = IPv4, for RoCE v2), and wc_flags has IBV_WC_GRH;
  - the 40-byte GRH area: RoCE v2 over IPv4 puts a 20-byte IPv4 header at
    byte 20 (checksum valid, protocol UDP, addresses = the GIDs' IPv4);
    otherwise an IPv6-style header fills all 40 bytes (version 6, next
    header UDP for v2 or 0x1B for v1, source and destination GIDs).
Prints one line per GID and exits 1 on the first mismatch.

usage: ud_grh.py [DEVICE]   (default mlx5_0)
"""
import ipaddress
import os
import struct
import sys

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

QKEY = 0x11111111
GRH = 40
PAYLOAD = b"vfab-ud-grh-check"


def gid_types(dev):
    base = f"/sys/class/infiniband/{dev}/ports/1"
    out = {}
    for name in os.listdir(f"{base}/gid_attrs/types"):
        try:
            with open(f"{base}/gid_attrs/types/{name}") as f:
                kind = f.read().strip()
            with open(f"{base}/gids/{name}") as f:
                gid = f.read().strip()
        except OSError:
            continue  # an empty slot: reading its type fails, as on hardware
        if kind and gid != "0000:0000:0000:0000:0000:0000:0000:0000":
            out[int(name)] = (kind, gid)
    return dict(sorted(out.items()))


def poll(cq):
    for _ in range(2000000):
        n, wcs = cq.poll()
        if n:
            return wcs[0]
    raise SystemExit("FAIL: no completion")


def ipv4_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def check(dev, index, kind, gid_text):
    gid = ipaddress.IPv6Address(gid_text).packed
    v4 = gid[:12] == b"\0" * 10 + b"\xff\xff"
    v2 = kind == "RoCE v2"
    want_sl = (2 if v4 else 1) if v2 else 0
    with Context(name=dev) as ctx, PD(ctx) as pd, CQ(ctx, 4) as cq:
        cap = QPCap(max_send_wr=1, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_UD, cap=cap, scq=cq, rcq=cq)
        attr = QPAttr(port_num=1)
        attr.qkey = QKEY
        rq, sq = QP(pd, init, attr), QP(pd, init, attr)
        buf = MR(pd, GRH + len(PAYLOAD), e.IBV_ACCESS_LOCAL_WRITE)
        src = MR(pd, len(PAYLOAD), e.IBV_ACCESS_LOCAL_WRITE)
        src.write(PAYLOAD, len(PAYLOAD))
        rq.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(buf.buf, GRH + len(PAYLOAD), buf.lkey)]))
        gr = GlobalRoute(dgid=ctx.query_gid(1, index), sgid_index=index, hop_limit=64)
        ah = AH(pd, attr=AHAttr(port_num=1, is_global=1, gr=gr))
        wr = SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(src.buf, len(PAYLOAD), src.lkey)])
        wr.set_wr_ud(ah, rq.qp_num, QKEY)
        sq.post_send(wr)
        wcs = [poll(cq), poll(cq)]
        wc = next(w for w in wcs if w.wr_id == 1)
        if wc.status != e.IBV_WC_SUCCESS:
            raise SystemExit(f"FAIL: GID {index}: receive status {wc.status}")
        got = buf.read(GRH + len(PAYLOAD), 0)
        problems = []
        if wc.sl != want_sl:
            problems.append(f"sl {wc.sl}, want {want_sl}")
        if not wc.wc_flags & e.IBV_WC_GRH:
            problems.append("IBV_WC_GRH not set")
        if wc.src_qp != sq.qp_num:
            problems.append(f"src_qp {wc.src_qp}, want {sq.qp_num}")
        if got[GRH:] != PAYLOAD:
            problems.append("payload differs")
        if v2 and v4:
            ip = got[20:40]
            if ip[0] != 0x45 or ip[9] != 17 or ipv4_checksum(ip) != 0xFFFF:
                problems.append(f"IPv4 header {ip.hex()}")
            if ip[12:16] != gid[12:] or ip[16:20] != gid[12:]:
                problems.append("IPv4 addresses are not the GIDs'")
        else:
            if got[0] >> 4 != 6 or got[6] != (17 if v2 else 0x1B):
                problems.append(f"GRH header {got[:8].hex()}")
            if got[8:24] != gid or got[24:40] != gid:
                problems.append("GRH GIDs are not the port's")
        name = {0: "GRH", 1: "IPv6", 2: "IPv4"}[want_sl]
        print(f"GID {index:2d} {kind:12s} {gid_text}: sl={wc.sl} ({name})"
              f"{' OK' if not problems else ' FAIL: ' + '; '.join(problems)}")
        return not problems


def main():
    dev = sys.argv[1] if len(sys.argv) > 1 else "mlx5_0"
    gids = gid_types(dev)
    if not gids:
        raise SystemExit(f"FAIL: {dev} port 1 has no GIDs")
    kinds = set()
    ok = True
    for index, (kind, gid) in gids.items():
        ok = check(dev, index, kind, gid) and ok
        kinds.add((kind, gid.startswith("0000:0000:0000:0000:0000:ffff")))
    if len(kinds) < 3:
        raise SystemExit(f"FAIL: only {len(kinds)} kinds of GID checked (want v1, v2 IPv4, v2 IPv6)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
