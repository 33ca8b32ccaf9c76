#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Holds RC QPs in the states `vfab trace` must explain (tests/integration/trace.sh).

In one process on DEVICE (port 1, GID index GID): QPs A and B connected to
each other with no receive posted on either (a SEND to either would wait in
RNR), and QP D connected to QP C of a child process. Writes "A B C D
CHILD_PID" (QPNs in hex, the child's pid) to OUT once all are in RTS, then
waits until the file STOP exists (at most 120 s).

usage: trace_qps.py DEVICE GID OUT STOP
"""
import os
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr


def make(ctx, pd, cq):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap, scq=cq, rcq=cq))


def connect(ctx, qp, gid_index, dest_qpn):
    gr = GlobalRoute(dgid=ctx.query_gid(1, gid_index), sgid_index=gid_index, hop_limit=64)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS, cur_qp_state=e.IBV_QPS_RESET, port_num=1)
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = dest_qpn
    attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr)
    attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
    attr.max_dest_rd_atomic = 1
    attr.max_rd_atomic = 1
    attr.min_rnr_timer = 12
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    qp.to_rts(attr)


def wait_for(path, seconds=120):
    end = time.time() + seconds
    while not os.path.exists(path) and time.time() < end:
        time.sleep(0.05)


def main():
    dev, gid, out, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    r_c, w_c = os.pipe()  # child -> parent: C's QPN
    r_d, w_d = os.pipe()  # parent -> child: D's QPN
    child = os.fork()
    if child == 0:
        with Context(name=dev) as ctx, PD(ctx) as pd, CQ(ctx, 8) as cq:
            c = make(ctx, pd, cq)
            os.write(w_c, f"{c.qp_num}\n".encode())
            d_qpn = int(os.read(r_d, 64).decode())
            connect(ctx, c, gid, d_qpn)
            wait_for(stop)
        os._exit(0)
    with Context(name=dev) as ctx, PD(ctx) as pd, CQ(ctx, 16) as cq:
        a, b, d = make(ctx, pd, cq), make(ctx, pd, cq), make(ctx, pd, cq)
        c_qpn = int(os.read(r_c, 64).decode())
        os.write(w_d, f"{d.qp_num}\n".encode())
        connect(ctx, a, gid, b.qp_num)
        connect(ctx, b, gid, a.qp_num)
        connect(ctx, d, gid, c_qpn)
        time.sleep(0.5)  # the child's QP C reaches RTS meanwhile
        with open(out + ".tmp", "w") as f:
            f.write(f"{a.qp_num:#08x} {b.qp_num:#08x} {c_qpn:#08x} {d.qp_num:#08x} {child}\n")
        os.rename(out + ".tmp", out)
        wait_for(stop)
    try:
        os.waitpid(child, 0)
    except ChildProcessError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
