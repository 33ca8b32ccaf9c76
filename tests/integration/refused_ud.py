#!/usr/bin/env python3
"""Datagrams the kernel refuses take no receive (int_nonroot), pyverbs on mlx5_0, GID 3.

  refused_ud.py victim PORT
  refused_ud.py sender SERVER_IP PORT COUNT TEXT

The victim (a UD QP with RECVS receives posted, wr_id 0..RECVS-1) tells each
sender that connects over TCP its QPN and GID, and waits until that sender
says it is done. A sender sends COUNT datagrams of TEXT and waits for their
send completions. int_nonroot runs a sender of another user first (the
kernel refuses its copies into the victim: every datagram is dropped), then
one of the victim's user: the victim must receive exactly that one, into its
first receive (wr_id 0): the refused datagrams took none.
"""
import socket
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AH, GID, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

GID_INDEX = 3
QKEY = 0x22222222
RECVS = 4
SLOT = 40 + 256


class End:
    def __init__(self):
        self.ctx = Context(name="mlx5_0")
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        self.mr = MR(self.pd, RECVS * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
        cap = QPCap(max_send_wr=16, max_recv_wr=RECVS, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=self.cq, rcq=self.cq,
                                              cap=cap))
        attr = QPAttr(port_num=1)
        attr.qkey = QKEY
        self.qp.to_rts(attr)
        self.gid = self.ctx.query_gid(1, GID_INDEX)


def victim(port):
    end = End()
    for i in range(RECVS):
        end.qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                                sg=[SGE(end.mr.buf + i * SLOT, SLOT, end.mr.lkey)]))
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(2)
    lsock.settimeout(60)
    print("ready", flush=True)
    for _ in range(2):
        sock, _ = lsock.accept()
        sock.sendall(f"{end.qp.qp_num} {end.gid.gid}\n".encode())
        sock.settimeout(60)
        if not sock.recv(16).startswith(b"done"):
            sys.exit("a sender did not finish")
        sock.close()
    got = []
    deadline = time.time() + 3
    while time.time() < deadline:
        n, wcs = end.cq.poll(8)
        got += wcs[:n]
        if not n:
            time.sleep(0.01)
    if len(got) != 1:
        sys.exit(f"{len(got)} receive completions, expected 1: "
                 f"{[(wc.wr_id, wc.status) for wc in got]}")
    wc = got[0]
    text = end.mr.read(wc.byte_len - 40, 40).decode(errors="replace") if wc.byte_len > 40 else ""
    if wc.status != e.IBV_WC_SUCCESS or wc.wr_id != 0 or text != "legit":
        sys.exit(f"receive: status {wc.status} wr_id {wc.wr_id} text {text!r}")
    print("the first receive took the one datagram of the same user", flush=True)


def sender(server_ip, port, count, text):
    end = End()
    sock = socket.create_connection((server_ip, port), timeout=30)
    qpn, gid = sock.recv(256).decode().split()
    gr = GlobalRoute(dgid=GID(gid), sgid_index=GID_INDEX, hop_limit=64)
    ah = AH(end.pd, attr=AHAttr(gr=gr, is_global=1, port_num=1))
    end.mr.write(text.encode(), len(text), 0)
    for i in range(count):
        wr = SendWR(wr_id=i, num_sge=1, sg=[SGE(end.mr.buf, len(text), end.mr.lkey)])
        wr.set_wr_ud(ah, int(qpn), QKEY)
        end.qp.post_send(wr)
    done, deadline = 0, time.time() + 10
    while done < count and time.time() < deadline:
        n, wcs = end.cq.poll(16)
        done += n
    sock.sendall(b"done\n")
    print(f"sent {count}, {done} completed", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "victim":
        victim(int(sys.argv[2]))
    else:
        sender(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
