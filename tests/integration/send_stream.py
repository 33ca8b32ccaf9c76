#!/usr/bin/env python3
"""One end of int_send_stream, with pyverbs on mlx5_0 port 1, GID 3.

  send_stream.py server TYPE PORT COUNT SIZE_MAX
  send_stream.py client TYPE SERVER_IP PORT COUNT SIZE_MAX

TYPE is rc, ud or rc-rnr. The ends swap QPs over TCP, then the server posts COUNT
receives, each into a slot of its own. The client posts COUNT SENDs
in bursts of BURST one by one with no poll in between (the provider holds
such a stream back and delivers it in chains), every third with an
immediate, sizes from 1 to SIZE_MAX bytes, each from its own send buffer
slot, and polls its send CQ only between bursts. The server checks every
receive completion: in posting order, status, length, immediate, the sender's
QP (UD) and the GRH's IPv4 addresses (UD), and every payload byte. Exits 0
and prints "received COUNT" when all are right. rc-rnr is rc with only a
third of the receives posted at first and the rest 0.3 s later: SENDs of
held streams meet RNR NAKs and go again once receives are there, in order.
"""
import socket
import struct
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
QKEY = 0x11111111
BURST = 48
GRH = 40


def size_of(i, size_max):
    return 1 + (i * 797) % size_max


def pattern(i, size):
    return bytes((i * 7 + j * 13) & 0xFF for j in range(size))


def imm_of(i):
    return 0xA5000000 | i if i % 3 == 0 else None


class End:
    def __init__(self, kind, count, size_max):
        self.ctx = Context(name="mlx5_0")
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 2 * count + 16)
        self.slot = size_max + GRH
        self.mr = MR(self.pd, count * self.slot, e.IBV_ACCESS_LOCAL_WRITE)
        qp_type = e.IBV_QPT_UD if kind == "ud" else e.IBV_QPT_RC
        self.kind = "ud" if kind == "ud" else "rc"
        cap = QPCap(max_send_wr=4 * BURST, max_recv_wr=count, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=qp_type, scq=self.cq, rcq=self.cq, cap=cap,
                                              sq_sig_all=0))
        self.gid = self.ctx.query_gid(1, GID_INDEX)

    def info(self):
        return f"{self.qp.qp_num} {self.gid.gid}"

    def connect(self, peer):
        qpn, gid = peer.split()
        attr = QPAttr(port_num=1)
        attr.qkey = QKEY
        if self.kind == "rc":
            gr = GlobalRoute(dgid=GID(gid), sgid_index=GID_INDEX, hop_limit=64)
            attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
            attr.dest_qp_num = int(qpn)
            attr.path_mtu = e.IBV_MTU_1024
            attr.max_dest_rd_atomic = 1
            attr.max_rd_atomic = 1
            attr.min_rnr_timer = 12
            attr.rnr_retry = 7
            attr.retry_cnt = 7
            attr.timeout = 14
        self.qp.to_rts(attr)
        return int(qpn), gid


def exchange(sock, mine):
    sock.sendall((mine + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)  # one line only: the server's "go" may follow at once
        if not chunk:
            sys.exit("peer closed the connection")
        data += chunk
    return data.decode().strip()


def server(kind, port, count, size_max):
    end = End(kind, count, size_max)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(1)
    print("ready", flush=True)
    lsock.settimeout(30)
    sock, peer = lsock.accept()
    client_qpn, _ = end.connect(exchange(sock, end.info()))

    def post(first, last):
        for i in range(first, last):
            end.qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                                    sg=[SGE(end.mr.buf + i * end.slot, end.slot, end.mr.lkey)]))

    early = count // 3 if kind == "rc-rnr" else count
    post(0, early)
    sock.sendall(b"go\n")
    late_at = time.time() + 0.3
    client_ip = socket.inet_aton(peer[0])
    got = 0
    deadline = time.time() + 60
    while got < count:
        if early < count and time.time() > late_at:
            post(early, count)
            early = count
        if time.time() > deadline:
            sys.exit(f"only {got} of {count} receives completed")
        n, wcs = end.cq.poll(16)
        for wc in wcs[:n]:
            i = got
            size = size_of(i, size_max)
            head = GRH if end.kind == "ud" else 0
            if wc.status != e.IBV_WC_SUCCESS:
                sys.exit(f"receive {i}: status {wc.status}")
            if wc.opcode != e.IBV_WC_RECV or wc.wr_id != i:
                sys.exit(f"receive {i}: opcode {wc.opcode} wr_id {wc.wr_id} (out of order)")
            if wc.byte_len != head + size:
                sys.exit(f"receive {i}: {wc.byte_len} bytes, expected {head + size}")
            imm = imm_of(i)
            if (imm is None) != (not wc.wc_flags & e.IBV_WC_WITH_IMM) or \
                    (imm is not None and socket.ntohl(wc.imm_data) != imm):
                sys.exit(f"receive {i}: immediate {wc.wc_flags:#x} {wc.imm_data:#x}")
            data = end.mr.read(head + size, i * end.slot)
            if end.kind == "ud":
                if wc.src_qp != client_qpn or not wc.wc_flags & e.IBV_WC_GRH:
                    sys.exit(f"receive {i}: src_qp {wc.src_qp} flags {wc.wc_flags:#x}")
                ip = data[20:40]
                if ip[0] != 0x45 or ip[9] != 17 or ip[12:16] != client_ip:
                    sys.exit(f"receive {i}: GRH {ip.hex()}")
                if struct.unpack("!H", ip[2:4])[0] != 20 + 8 + 12 + 8 + size + 4:
                    sys.exit(f"receive {i}: GRH total length {ip[2:4].hex()}")
            if data[head:] != pattern(i, size):
                sys.exit(f"receive {i}: payload differs")
            got += 1
        if not n:
            time.sleep(0.0005)
    sock.sendall(b"done\n")
    print(f"received {got}", flush=True)


def client(kind, server_ip, port, count, size_max):
    end = End(kind, count, size_max)
    sock = socket.create_connection((server_ip, port), timeout=30)
    server_qpn, server_gid = end.connect(exchange(sock, end.info()))
    if sock.recv(3) != b"go\n":
        sys.exit("the server did not post its receives")
    ah = None
    if end.kind == "ud":
        gr = GlobalRoute(dgid=GID(server_gid), sgid_index=GID_INDEX, hop_limit=64)
        ah = AH(end.pd, attr=AHAttr(gr=gr, is_global=1, port_num=1))
    for i in range(count):
        end.mr.write(pattern(i, size_of(i, size_max)), size_of(i, size_max), i * end.slot)
    outstanding = 0
    for start in range(0, count, BURST):
        last = min(start + BURST, count)
        for i in range(start, last):
            imm = imm_of(i)
            wr = SendWR(wr_id=i, num_sge=1,
                        opcode=e.IBV_WR_SEND if imm is None else e.IBV_WR_SEND_WITH_IMM,
                        sg=[SGE(end.mr.buf + i * end.slot, size_of(i, size_max), end.mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED if i == last - 1 else 0)
            if imm is not None:
                wr.imm_data = socket.htonl(imm)
            if ah is not None:
                wr.set_wr_ud(ah, server_qpn, QKEY)
            end.qp.post_send(wr)
        outstanding += 1
        deadline = time.time() + 30
        while outstanding:
            n, wcs = end.cq.poll()
            for wc in wcs[:n]:
                if wc.status != e.IBV_WC_SUCCESS:
                    sys.exit(f"send {wc.wr_id}: status {wc.status}")
                outstanding -= 1
            if time.time() > deadline:
                sys.exit(f"burst at {start}: no send completion")
    sock.settimeout(60)
    if sock.recv(16) != b"done\n":
        sys.exit("the server did not confirm")
    print(f"sent {count}", flush=True)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "server":
        server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif len(sys.argv) == 7 and sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
