#!/usr/bin/env python3
"""One end of int_raw_packet's exchanges, with pyverbs on mlx5_0 port 1.

  raw_packet.py send DST_MAC DST_IP PORT COUNT
      COUNT UDP datagrams from a raw packet QP, built with zero checksums and
      sent with IBV_SEND_IP_CSUM: the HCA fills them in, else the receiving
      kernel drops them. Exits 0 once every send completed successfully.
  raw_packet.py recv PORT COUNT SECONDS
      A raw packet QP whose flow takes UDP/IPv4 to PORT waits for COUNT
      frames; prints "got N csum_ok M bytes B" and exits 0 when all came.
  raw_packet.py rss PORT COUNT SECONDS
      An RSS QP over four WQs (one CQ each) hashing IPv4 addresses and UDP
      ports with a random key, its flow taking UDP to PORT, waits for COUNT
      frames; each must complete in the WQ that Toeplitz (computed here, not
      by vfab) picks, with the WQ's number. Prints the spread; exits 0 when
      all came where they belong.
  raw_packet.py refused
      Exits 0 when creating a raw packet QP fails with EPERM (a user without
      CAP_NET_RAW) and a flow on a UD QP with EOPNOTSUPP.
"""
import errno
import socket
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.flow import Flow, FlowAttr
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.spec import EthSpec, Ipv4ExtSpec, TcpUdpSpec
from pyverbs.wq import WQ, RwqIndTable, RwqIndTableInitAttr, RxHashConf, WQAttr, WQInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

BUF = 2048


def mac_of(ifname):
    with open(f"/sys/class/net/{ifname}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def ipv4_of(ifname):
    import fcntl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    req = struct.pack("256s", ifname.encode())
    return fcntl.ioctl(s.fileno(), 0x8915, req)[20:24]  # SIOCGIFADDR


def netdev():
    with open("/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0") as f:
        return f.read().strip()


def raw_qp(ctx, pd, cq):
    cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=1, max_recv_sge=1)
    init = QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq, cap=cap)
    return QP(pd, init, QPAttr(port_num=1))


def send(dst_mac, dst_ip, port, count):
    dev = netdev()
    ctx = Context(name="mlx5_0")
    pd = PD(ctx)
    cq = CQ(ctx, 128)
    qp = raw_qp(ctx, pd, cq)
    mr = MR(pd, BUF, e.IBV_ACCESS_LOCAL_WRITE)
    for i in range(count):
        payload = f"vfab raw frame {i}".encode()
        udp = struct.pack("!HHHH", 40000 + i, port, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0x4000, 64, 17, 0,
                         ipv4_of(dev), socket.inet_aton(dst_ip))
        frame = (bytes.fromhex(dst_mac.replace(":", "")) + mac_of(dev) + b"\x08\x00" +
                 ip + udp)
        mr.write(frame, len(frame))
        wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, len(frame), mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_IP_CSUM)
        qp.post_send(wr)
        deadline = time.time() + 5
        while True:
            n, wcs = cq.poll()
            if n:
                if wcs[0].status != e.IBV_WC_SUCCESS:
                    sys.exit(f"send {i}: completion status {wcs[0].status}")
                break
            if time.time() > deadline:
                sys.exit(f"send {i}: no completion")
        time.sleep(0.01)
    print(f"sent {count}")


def recv(port, count, secs):
    ctx = Context(name="mlx5_0")
    pd = PD(ctx)
    cq = CQ(ctx, 128)
    qp = raw_qp(ctx, pd, cq)
    mr = MR(pd, BUF * count, e.IBV_ACCESS_LOCAL_WRITE)
    attr = FlowAttr(num_of_specs=3, port=1)
    attr.specs.append(EthSpec(ether_type=0x800, dst_mac=":".join(
        f"{b:02x}" for b in mac_of(netdev()))))
    attr.specs.append(Ipv4ExtSpec(proto=socket.IPPROTO_UDP))
    attr.specs.append(TcpUdpSpec(e.IBV_FLOW_SPEC_UDP, dst_port=port))
    flow = Flow(qp, attr)
    for i in range(count):
        qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * BUF, BUF, mr.lkey)]))
    print("ready", flush=True)
    got = csum_ok = nbytes = 0
    deadline = time.time() + secs
    while got < count and time.time() < deadline:
        n, wcs = cq.poll()
        for wc in wcs[:n]:
            if wc.status != e.IBV_WC_SUCCESS:
                sys.exit(f"receive: completion status {wc.status}")
            frame = mr.read(wc.byte_len, wc.wr_id * BUF)
            if struct.unpack("!H", frame[36:38])[0] != port:
                sys.exit(f"receive: a frame to port {struct.unpack('!H', frame[36:38])[0]}")
            got += 1
            nbytes += wc.byte_len
            csum_ok += bool(wc.wc_flags & e.IBV_WC_IP_CSUM_OK)
        if not n:
            time.sleep(0.001)
    flow.close()
    print(f"got {got} csum_ok {csum_ok} bytes {nbytes}")
    sys.exit(0 if got == count else 1)


def expect_errno(want, what, call):
    try:
        call()
    except PyverbsRDMAError as ex:
        if ex.error_code == want:
            return
        sys.exit(f"{what}: errno {ex.error_code}, not {want}")
    sys.exit(f"{what}: succeeded")


def toeplitz(key, data):
    k, kbits, h = int.from_bytes(key, "big"), len(key) * 8, 0
    for pos in range(len(data) * 8):
        if data[pos // 8] >> (7 - pos % 8) & 1:
            h ^= (k >> (kbits - 32 - pos)) & 0xffffffff
    return h


def rss_wait(cqs, wqs, mr, key, count, secs):
    nwq = len(wqs)
    got, spread = 0, [0] * nwq
    deadline = time.time() + secs
    while got < count and time.time() < deadline:
        idle = True
        for i, cq in enumerate(cqs):
            n, wcs = cq.poll()
            for wc in wcs[:n]:
                idle = False
                if wc.status != e.IBV_WC_SUCCESS:
                    sys.exit(f"receive: completion status {wc.status}")
                if wc.qp_num != wqs[i].wqn:
                    sys.exit(f"receive in WQ {i}: qp_num {wc.qp_num}, not {wqs[i].wqn}")
                frame = mr.read(wc.byte_len, wc.wr_id * BUF)
                want = toeplitz(bytes(key), frame[26:34] + frame[34:38]) & (nwq - 1)
                if want != i or wc.wr_id // count != i:
                    sys.exit(f"a frame from port {struct.unpack('!H', frame[34:36])[0]} "
                             f"completed in WQ {i}, Toeplitz says WQ {want}")
                got += 1
                spread[i] += 1
        if idle:
            time.sleep(0.001)
    return got, spread


def rss(port, count, secs):
    import os
    nwq = 4
    ctx = Context(name="mlx5_0")
    pd = PD(ctx)
    cqs = [CQ(ctx, count) for _ in range(nwq)]
    mr = MR(pd, BUF * count * nwq, e.IBV_ACCESS_LOCAL_WRITE)
    wqs = []
    for i in range(nwq):
        wq = WQ(ctx, WQInitAttr(wq_pd=pd, wq_cq=cqs[i], wq_type=e.IBV_WQT_RQ, max_wr=count,
                                max_sge=1))
        wq.modify(WQAttr(attr_mask=e.IBV_WQ_ATTR_STATE, wq_state=e.IBV_WQS_RDY))
        for j in range(count):
            slot = i * count + j
            wq.post_recv(RecvWR(wr_id=slot, num_sge=1,
                                sg=[SGE(mr.buf + slot * BUF, BUF, mr.lkey)]), None)
        wqs.append(wq)
    table = RwqIndTable(ctx, RwqIndTableInitAttr(log_ind_tbl_size=2, wqs_list=wqs))
    key = list(os.urandom(40))
    fields = (e.IBV_RX_HASH_SRC_IPV4 | e.IBV_RX_HASH_DST_IPV4 | e.IBV_RX_HASH_SRC_PORT_UDP |
              e.IBV_RX_HASH_DST_PORT_UDP)
    conf = RxHashConf(rx_hash_function=e.IBV_RX_HASH_FUNC_TOEPLITZ, rx_hash_key_len=40,
                      rx_hash_key=key, rx_hash_fields_mask=fields)
    mask = e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_RX_HASH | e.IBV_QP_INIT_ATTR_IND_TABLE
    # mlx5's rules: a 40-byte key; fields of one IP version and one L4 protocol.
    for bad in (RxHashConf(rx_hash_function=e.IBV_RX_HASH_FUNC_TOEPLITZ, rx_hash_key_len=16,
                           rx_hash_key=key[:16], rx_hash_fields_mask=fields),
                RxHashConf(rx_hash_function=e.IBV_RX_HASH_FUNC_TOEPLITZ, rx_hash_key_len=40,
                           rx_hash_key=key,
                           rx_hash_fields_mask=fields | e.IBV_RX_HASH_SRC_PORT_TCP)):
        expect_errno(errno.EINVAL, "an RSS QP with a bad hash", lambda: QPEx(
            ctx, QPInitAttrEx(qp_type=e.IBV_QPT_RAW_PACKET, pd=pd, hash_conf=bad,
                              ind_table=table, comp_mask=mask)))
    qp = QPEx(ctx, QPInitAttrEx(qp_type=e.IBV_QPT_RAW_PACKET, pd=pd, hash_conf=conf,
                                ind_table=table, comp_mask=mask))
    attr = FlowAttr(num_of_specs=1, port=1)
    attr.specs.append(TcpUdpSpec(e.IBV_FLOW_SPEC_UDP, dst_port=port))
    flow = Flow(qp, attr)
    print("ready", flush=True)
    try:
        got, spread = rss_wait(cqs, wqs, mr, key, count, secs)
    finally:
        # Dependents first: pyverbs does not tie the QP to its table.
        for obj in [flow, qp, table] + wqs + cqs + [mr, pd, ctx]:
            obj.close()
    print(f"got {got} spread {spread}")
    sys.exit(0 if got == count and sum(1 for x in spread if x) > 1 else 1)


def refused():
    ctx = Context(name="mlx5_0")
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    try:
        raw_qp(ctx, pd, cq)
        sys.exit("a raw packet QP was created without CAP_NET_RAW")
    except PyverbsRDMAError as ex:
        if ex.error_code != errno.EPERM:
            sys.exit(f"raw packet QP without CAP_NET_RAW: errno {ex.error_code}, not EPERM")
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    ud = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap), QPAttr(port_num=1))
    attr = FlowAttr(num_of_specs=0, port=1)
    try:
        Flow(ud, attr)
        sys.exit("a flow on a UD QP of a RoCE port was created")
    except PyverbsRDMAError as ex:
        if ex.error_code != errno.EOPNOTSUPP:
            sys.exit(f"flow on a UD QP: errno {ex.error_code}, not EOPNOTSUPP")
    print("refused as the kernel refuses")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "send":
        send(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "recv":
        recv(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "rss":
        rss(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        refused()
