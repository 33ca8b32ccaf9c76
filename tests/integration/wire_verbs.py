#!/usr/bin/python3
"""RC QPs to another machine through pyverbs: what perftest does not use.

wire_verbs.py server PORT N         answer N fork exchanges, one at a time
wire_verbs.py client HOST PORT      the parent exchanges once, forks a child
                                    that exchanges with a QP of its own (no
                                    exec), then the parent exchanges again
wire_verbs.py inv-server PORT       SEND with invalidate, the window's side
wire_verbs.py inv-client HOST PORT  ... and the sender's
wire_verbs.py bulk-server PORT      8 rounds of 1 MiB WRITEs, the target's side
wire_verbs.py bulk-client HOST PORT ... and the writer's

An exchange: a fresh context, PD, CQ and RC QP on mlx5_0 port 1 (GID index
3), QP number, PSN and GID traded over TCP, then the client SENDs 4 KiB of
random bytes and the server SENDs them back reversed; both check them. A
child after fork() must get a wire of its own, and the parent's must go on.

SEND with invalidate: the server binds a type 2 memory window over 4 KiB of
its MR and tells the client its R_Key; the client WRITEs 4 KiB through it,
SENDs with invalidate naming it, then WRITEs through it again. The WRITE
lands, the receive completes with IBV_WC_WITH_INV and that R_Key, and the
last WRITE fails with a remote access error: the window is gone.

Bulk: the client WRITEs 1 MiB of random bytes into the server's MR, then
SENDs their SHA-256; the server hashes what landed and says whether it
matches before the next round (through a lossy link: retransmitted data
must arrive whole and in place).
Prints one line per step; exits 1 on the first failure.
"""
import hashlib
import json
import os
import random
import socket
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute, GID
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR, MW, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

DEV, PORT_NUM, GID_INDEX, SIZE = "mlx5_0", 1, 3, 4096
BULK, ROUNDS = 1 << 20, 8


class Side:
    """An RC QP and an MR of twice size: bytes to send, then the receive buffer."""

    def __init__(self, size=SIZE, access=e.IBV_ACCESS_MW_BIND):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 8)
        cap = QPCap(max_send_wr=2, max_recv_wr=2, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                         cap=cap))
        self.size = size
        self.mr = MR(self.pd, 2 * size, e.IBV_ACCESS_LOCAL_WRITE | access)
        self.psn = random.getrandbits(24)

    def me(self):
        return {"qpn": self.qp.qp_num, "psn": self.psn,
                "gid": str(self.ctx.query_gid(PORT_NUM, GID_INDEX))}

    def connect(self, peer):
        attr = QPAttr(qp_state=e.IBV_QPS_INIT, cur_qp_state=e.IBV_QPS_RESET)
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer["qpn"]
        attr.rq_psn = peer["psn"]
        attr.sq_psn = self.psn
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
        attr.ah_attr = AHAttr(port_num=PORT_NUM, is_global=1,
                              gr=GlobalRoute(dgid=GID(peer["gid"]), sgid_index=GID_INDEX,
                                             hop_limit=64))
        self.qp.to_rts(attr)
        self.mr.write(bytes(self.size), self.size, self.size)
        self.post_recv()

    def post_recv(self):
        self.qp.post_recv(RecvWR(num_sge=1, sg=[SGE(self.mr.buf + self.size, self.size,
                                                    self.mr.lkey)]))

    def send(self, data):
        self.mr.write(data, len(data), 0)
        wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(self.mr.buf, len(data), self.mr.lkey)])
        self.qp.post_send(wr)

    def wait(self, want, status=e.IBV_WC_SUCCESS):
        """Poll until `want` completions of that status (10 s at most); returns the last."""
        got, end = 0, time.monotonic() + 10
        while got < want:
            n, wcs = self.cq.poll(num_entries=1)
            if n and wcs[0].status != status:
                sys.exit("completion status %d (opcode %d), want %d" %
                         (wcs[0].status, wcs[0].opcode, status))
            got += n
            if time.monotonic() > end:
                sys.exit("%d of %d completions in 10 s" % (got, want))
        return wcs[0]

    def received(self):
        return self.mr.read(SIZE, SIZE)


class Peer:
    """The TCP connection to the other side: JSON lines, read one at a time
    (two may arrive in one segment)."""

    def __init__(self, sock):
        self.sock, self.rfile = sock, sock.makefile("rb")

    def close(self):
        self.rfile.close()
        self.sock.close()


def trade(peer, mine):
    peer.sock.sendall((json.dumps(mine) + "\n").encode())
    line = peer.rfile.readline()
    if not line:
        sys.exit("the peer hung up")
    return json.loads(line)


def serve(port, n):
    lsock = socket.create_server(("0.0.0.0", port))
    for i in range(n):
        conn = Peer(lsock.accept()[0])
        s = Side()
        s.connect(trade(conn, s.me()))
        trade(conn, {"ready": 1})
        s.wait(1)
        s.send(s.received()[::-1])
        s.wait(1)
        trade(conn, {"done": 1})
        conn.close()
        print("server: exchange %d done" % (i + 1), flush=True)


def exchange(host, port, who):
    conn = Peer(socket.create_connection((host, port), timeout=20))
    s = Side()
    s.connect(trade(conn, s.me()))
    trade(conn, {"ready": 1})
    data = os.urandom(SIZE)
    s.send(data)
    s.wait(2)
    if s.received() != data[::-1]:
        sys.exit("%s: the answer is not the data reversed" % who)
    trade(conn, {"done": 1})
    print("%s (pid %d): 4 KiB out and back, checked" % (who, os.getpid()), flush=True)


def client(host, port):
    exchange(host, port, "parent")
    pid = os.fork()
    if pid == 0:
        try:
            exchange(host, port, "child")
        except SystemExit as ex:
            print(ex, flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        sys.exit("the child failed (status %#x)" % status)
    exchange(host, port, "parent again")


def inv_server(port):
    conn = Peer(socket.create_server(("0.0.0.0", port)).accept()[0])
    s = Side()
    s.connect(trade(conn, s.me()))
    mw = MW(s.pd, e.IBV_MW_TYPE_2)
    bind = SendWR(opcode=e.IBV_WR_BIND_MW)
    bind.set_bind_wr(mw, MWBindInfo(s.mr, s.mr.buf, SIZE, e.IBV_ACCESS_REMOTE_WRITE))
    s.qp.post_send(bind)
    s.wait(1)
    trade(conn, {"rkey": bind.rkey, "va": s.mr.buf})
    wc = s.wait(1)  # the SEND with invalidate's receive
    if not wc.wc_flags & e.IBV_WC_WITH_INV or wc.imm_data != bind.rkey:
        sys.exit("receive: flags %#x, R_Key %#x; want WITH_INV and %#x" %
                 (wc.wc_flags, wc.imm_data, bind.rkey))
    print("server: the SEND invalidated R_Key %#x" % bind.rkey, flush=True)
    trade(conn, {"written": s.mr.read(SIZE, 0).hex()})
    trade(conn, {"bye": 1})  # the QP lives until the client's last WRITE is answered


def inv_client(host, port):
    conn = Peer(socket.create_connection((host, port), timeout=20))
    s = Side()
    s.connect(trade(conn, s.me()))
    win = trade(conn, {"ready": 1})
    data = os.urandom(SIZE)
    s.mr.write(data, SIZE, 0)

    def post(opcode):
        wr = SendWR(opcode=opcode, num_sge=1, sg=[SGE(s.mr.buf, SIZE, s.mr.lkey)])
        if opcode == e.IBV_WR_RDMA_WRITE:
            wr.set_wr_rdma(win["rkey"], win["va"])
        else:
            wr.imm_data = win["rkey"]  # verbs keep invalidate_rkey in imm_data's place
        s.qp.post_send(wr)

    post(e.IBV_WR_RDMA_WRITE)
    s.wait(1)
    post(e.IBV_WR_SEND_WITH_INV)
    s.wait(1)
    if bytes.fromhex(trade(conn, {"sent": 1})["written"]) != data:
        sys.exit("the WRITE through the window did not land")
    print("client: WRITE through the window landed, SEND with invalidate done", flush=True)
    post(e.IBV_WR_RDMA_WRITE)
    s.wait(1, e.IBV_WC_REM_ACCESS_ERR)
    print("client: the WRITE after the invalidation: remote access error", flush=True)
    trade(conn, {"bye": 1})


def bulk_server(port):
    conn = Peer(socket.create_server(("0.0.0.0", port)).accept()[0])
    s = Side(BULK, e.IBV_ACCESS_REMOTE_WRITE)
    s.connect(trade(conn, s.me()))
    trade(conn, {"rkey": s.mr.rkey, "va": s.mr.buf})
    for r in range(ROUNDS):
        s.wait(1)  # the digest, SENT after the WRITE
        ok = hashlib.sha256(s.mr.read(BULK, 0)).hexdigest() == s.mr.read(64, BULK).decode()
        s.post_recv()
        trade(conn, {"ok": ok})
        if not ok:
            sys.exit("server: round %d: the bytes that landed are not the ones sent" % r)
    print("server: %d x 1 MiB WRITTEN, each as its digest says" % ROUNDS, flush=True)
    trade(conn, {"bye": 1})


def bulk_client(host, port):
    conn = Peer(socket.create_connection((host, port), timeout=20))
    s = Side(BULK)
    s.connect(trade(conn, s.me()))
    win = trade(conn, {"ready": 1})
    for r in range(ROUNDS):
        data = os.urandom(BULK)
        s.mr.write(data, BULK, 0)
        s.mr.write(hashlib.sha256(data).hexdigest().encode(), 64, BULK)
        wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(s.mr.buf, BULK, s.mr.lkey)])
        wr.set_wr_rdma(win["rkey"], win["va"])
        s.qp.post_send(wr)
        s.qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                              sg=[SGE(s.mr.buf + BULK, 64, s.mr.lkey)]))
        s.wait(2)
        if not trade(conn, {"round": r})["ok"]:
            sys.exit("client: round %d: the server found other bytes" % r)
    print("client: %d x 1 MiB WRITTEN and checked by the server" % ROUNDS, flush=True)
    trade(conn, {"bye": 1})


if __name__ == "__main__":
    {"server": lambda: serve(int(sys.argv[2]), int(sys.argv[3])),
     "client": lambda: client(sys.argv[2], int(sys.argv[3])),
     "inv-server": lambda: inv_server(int(sys.argv[2])),
     "inv-client": lambda: inv_client(sys.argv[2], int(sys.argv[3])),
     "bulk-server": lambda: bulk_server(int(sys.argv[2])),
     "bulk-client": lambda: bulk_client(sys.argv[2], int(sys.argv[3]))}[sys.argv[1]]()
