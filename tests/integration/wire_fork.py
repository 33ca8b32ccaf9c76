#!/usr/bin/python3
"""RC QPs to another machine before and after fork(), through pyverbs.

wire_fork.py server PORT N    answer N exchanges, one at a time
wire_fork.py client HOST PORT the parent exchanges once, forks a child that
                              exchanges with a QP of its own (no exec), then
                              the parent exchanges again

An exchange: a fresh context, PD, CQ and RC QP on mlx5_0 port 1 (GID index
3), QP number, PSN and GID traded over TCP, then the client SENDs 4 KiB of
random bytes and the server SENDs them back reversed; both check them. A
child after fork() must get a wire of its own, and the parent's must go on.
Prints one line per exchange; exits 1 on the first failure.
"""
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
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

DEV, PORT_NUM, GID_INDEX, SIZE = "mlx5_0", 1, 3, 4096


class Side:
    def __init__(self):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 8)
        cap = QPCap(max_send_wr=2, max_recv_wr=2, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                         cap=cap))
        self.mr = MR(self.pd, 2 * SIZE, e.IBV_ACCESS_LOCAL_WRITE)
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
        attr.ah_attr = AHAttr(port_num=PORT_NUM, is_global=1,
                              gr=GlobalRoute(dgid=GID(peer["gid"]), sgid_index=GID_INDEX,
                                             hop_limit=64))
        self.qp.to_rts(attr)
        self.mr.write(bytes(SIZE), SIZE, SIZE)
        self.qp.post_recv(RecvWR(num_sge=1, sg=[SGE(self.mr.buf + SIZE, SIZE, self.mr.lkey)]))

    def send(self, data):
        self.mr.write(data, len(data), 0)
        wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(self.mr.buf, len(data), self.mr.lkey)])
        self.qp.post_send(wr)

    def wait(self, want):
        """Poll until `want` successful completions (10 s at most)."""
        got, end = 0, time.monotonic() + 10
        while got < want:
            n, wcs = self.cq.poll(num_entries=4)
            for wc in wcs[:n]:
                if wc.status != e.IBV_WC_SUCCESS:
                    sys.exit("completion status %d (opcode %d)" % (wc.status, wc.opcode))
                got += 1
            if time.monotonic() > end:
                sys.exit("%d of %d completions in 10 s" % (got, want))

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


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        client(sys.argv[2], int(sys.argv[3]))
