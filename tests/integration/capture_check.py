#!/usr/bin/env python3
"""Checks a `vfab capture` pcap as a wire capture would be checked.

capture_check.py FILE KIND [--msgs N] [--pkts N]

- Every frame whose bytes are all there carries a correct ICRC, computed
  here independently of vfab (zlib's CRC-32 over the IBA's masked copy).
- tshark decodes every frame as InfiniBand without malformed packets or
  expert items of warning or error severity.
- KIND says what the traffic is (write, send, read, atomic, ud, rping; cm:
  an RDMA CM connection's MADs to QP1 and its traffic) and
  the opcodes must follow the IBA's order per QP: First Middle* Last or
  Only per message, PSNs consecutive, each answered (ACK on the message's
  last PSN, READ responses from the request's PSN, atomic ACK on its PSN).
- --msgs N: at least N messages; --pkts N: packets per message.
Prints a summary; exits 1 with the reason on the first violation.
"""
import argparse
import collections
import struct
import subprocess
import sys
import zlib

# BTH opcodes (IBA 9.2): low 5 bits within a transport.
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = 0, 1, 2, 3, 4, 5
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM = 6, 7, 8, 9, 10, 11
READ_REQ, RR_FIRST, RR_MIDDLE, RR_LAST, RR_ONLY, ACK, ATOMIC_ACK, CMP_SWAP, FETCH_ADD = (
    12, 13, 14, 15, 16, 17, 18, 19, 20)
SEND_LAST_INV, SEND_ONLY_INV = 22, 23
FIRSTS = {SEND_FIRST, WRITE_FIRST}
MIDDLES = {SEND_MIDDLE, WRITE_MIDDLE}
LASTS = {SEND_LAST, SEND_LAST_IMM, WRITE_LAST, WRITE_LAST_IMM, SEND_LAST_INV}
ONLYS = {SEND_ONLY, SEND_ONLY_IMM, WRITE_ONLY, WRITE_ONLY_IMM, SEND_ONLY_INV}


def die(msg):
    print("capture_check: " + msg)
    sys.exit(1)


def frames(path):
    """(bytes, original length) of every frame of a pcap (any time stamp precision)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (0xa1b2c3d4, 0xa1b23c4d):
        die("%s: not a little-endian pcap (magic %#x)" % (path, magic))
    linktype = struct.unpack_from("<I", data, 20)[0]
    if linktype != 1:
        die("link type %d, want Ethernet (1)" % linktype)
    off, out = 24, []
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append((data[off:off + incl], orig))
        off += incl
    if off != len(data):
        die("pcap ends inside a record")
    return out


def icrc_ok(fr):
    """Whether the frame's last 4 bytes are its ICRC (IBA A17.8, RoCE v1 and v2)."""
    eth = struct.unpack_from(">H", fr, 12)[0]
    m = bytearray(fr[14:-4])
    if eth == 0x0800:
        ihl = (m[0] & 15) * 4
        m[1] = 0xff                     # TOS
        m[8] = 0xff                     # TTL
        m[10:12] = b"\xff\xff"          # header checksum
        m[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
        m[ihl + 8 + 4] = 0xff           # BTH resv8a
    elif eth == 0x86dd:
        m[0] |= 0x0f                    # traffic class and flow label
        m[1:4] = b"\xff\xff\xff"
        m[7] = 0xff                     # hop limit
        m[40 + 6:40 + 8] = b"\xff\xff"  # UDP checksum
        m[48 + 4] = 0xff                # BTH resv8a
    elif eth == 0x8915:
        m[0] |= 0x0f                    # GRH traffic class and flow label
        m[1:4] = b"\xff\xff\xff"
        m[7] = 0xff                     # hop limit
        m[40 + 4] = 0xff                # BTH resv8a
    else:
        die("ethertype %#x is not RoCE" % eth)
    want = zlib.crc32(b"\xff" * 8 + bytes(m)) & 0xffffffff
    return struct.unpack("<I", fr[-4:])[0] == want


def payload_heuristics():
    """tshark's guessers of what an InfiniBand payload carries (RPC-over-RDMA, SMB
    Direct, ...): perftest's random bytes are not those protocols, so they are
    off, as one would turn them off on a hardware capture of perftest."""
    out = subprocess.run(["tshark", "-G", "heuristic-decodes"], capture_output=True, text=True,
                         check=False).stdout
    args = []
    for line in out.splitlines():
        f = line.split("\t")
        # Not Ethernet's own dissector or InfiniBand's: those decode the frame.
        if len(f) >= 2 and f[0] == "infiniband.payload" and f[1] != "ethertype" and \
                not f[1].startswith("infiniband"):
            args += ["--disable-protocol", f[1]]
    return args


def tshark_rows(path):
    out = subprocess.run(
        ["tshark", "-r", path] + payload_heuristics() + [
         "-T", "fields", "-E", "separator=;", "-e", "frame.number",
         "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
         "-e", "_ws.malformed", "-e", "_ws.expert.severity", "-e", "_ws.expert.message",
         "-e", "ip.dst", "-e", "ipv6.dst"],
        capture_output=True, text=True, check=False)
    if out.returncode:
        die("tshark failed: " + out.stderr.strip())
    rows = []
    for line in out.stdout.splitlines():
        num, op, qp, psn, malformed, sev, msg, dst4, dst6 = (line.split(";") + [""] * 9)[:9]
        if malformed:
            die("frame %s is malformed (%s)" % (num, msg))
        if op == "":
            die("frame %s is not decoded as InfiniBand" % num)
        for s, text in zip(sev.split(","), msg.split(",")):
            # 0x00400000 note, 0x00600000 warning, 0x00800000 error
            if s and int(s, 0) >= 0x00600000:
                die("frame %s: expert item of severity %s: %s" % (num, s, text))
        # A QP is its number at its address: two machines number QPs alike.
        where = dst4 or dst6
        qpid = "%s%#x" % (where + "/" if where else "", int(qp, 0))
        rows.append((int(num), int(op, 0), qpid, int(psn, 0)))
    return rows


CM_ATTRS = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU", 0x15: "DREQ",
            0x16: "DREP"}


def check_cm(path, rows):
    """Datagrams to QP1 are IB CM MADs (class 7) as tshark decodes them, a
    connection's whole life among them: REQ with rdma_cm's IP header, REP,
    RTU, DREQ. (Not necessarily a DREP: the side that disconnects second
    may exit before its CM answers, as vfab's CM runs in the process.)
    Returns how many of each."""
    to_qp1 = {num for num, op, qp, _ in rows if op == 0x64 and qp.endswith("/0x1")}
    out = subprocess.run(
        ["tshark", "-r", path, "-Y", "infiniband.mad", "-T", "fields", "-E", "separator=;",
         "-e", "frame.number", "-e", "infiniband.mad.mgmtclass", "-e", "infiniband.mad.attributeid",
         "-e", "infiniband.cm.req.ip_cm.dip4", "-e", "infiniband.cm.req.serviceid.dport"],
        capture_output=True, text=True, check=False)
    if out.returncode:
        die("tshark failed: " + out.stderr.strip())
    seen = collections.Counter()
    mads = set()
    for line in out.stdout.splitlines():
        num, cls, attr, dip4, dport = (line.split(";") + [""] * 5)[:5]
        mads.add(int(num))
        if int(cls, 0) != 7 or int(attr, 0) not in CM_ATTRS:
            die("frame %s: MAD class %s attribute %s, want an IB CM message" % (num, cls, attr))
        name = CM_ATTRS[int(attr, 0)]
        if name == "REQ" and not (dip4 and dport):
            die("frame %s: a REQ without rdma_cm's IP header or port" % num)
        seen[name] += 1
    if to_qp1 - mads:
        die("frames %s go to QP1 but are no MADs" % sorted(to_qp1 - mads))
    for name in ("REQ", "REP", "RTU", "DREQ"):
        if not seen[name]:
            die("no %s among the CM's MADs (%s)" % (name, dict(seen)))
    return seen


def check_stream(kind, rows, want_pkts):
    """The opcode order per destination QP; returns the number of messages."""
    by_qp = collections.defaultdict(list)
    for r in rows:
        by_qp[r[2]].append(r)
    msgs = 0
    for qp, rs in by_qp.items():
        expect_psn = None
        cur = None  # (first psn, packets) of a multi-packet message in progress
        for num, op, _, psn in rs:
            low = op & 0x1f
            if kind == "ud" and op not in (0x64, 0x65):
                die("frame %d: UD opcode %#x" % (num, op))
            if op in (0x64, 0x65):
                # Datagrams (the CM's MADs too): their PSNs are their senders', several
                # senders per QP.
                msgs += 1
                continue
            if low in (ACK, ATOMIC_ACK) or low in (RR_FIRST, RR_MIDDLE, RR_LAST, RR_ONLY):
                continue  # answers: checked on the requester's side below
            if expect_psn is not None and psn != expect_psn:
                die("QP %s frame %d: PSN %d, want %d" % (qp, num, psn, expect_psn))
            expect_psn = (psn + 1) & 0xffffff
            if low in FIRSTS:
                if cur:
                    die("QP %s frame %d: First inside a message" % (qp, num))
                cur = [psn, 1]
            elif low in MIDDLES:
                if not cur:
                    die("QP %s frame %d: Middle outside a message" % (qp, num))
                cur[1] += 1
            elif low in LASTS:
                if not cur:
                    die("QP %s frame %d: Last outside a message" % (qp, num))
                cur[1] += 1
                if want_pkts and cur[1] != want_pkts:
                    die("QP %s frame %d: %d packets, want %d" % (qp, num, cur[1], want_pkts))
                cur = None
                msgs += 1
            elif low in ONLYS | {READ_REQ, CMP_SWAP, FETCH_ADD}:
                if cur:
                    die("QP %s frame %d: opcode %d inside a message" % (qp, num, low))
                if want_pkts and low in ONLYS and want_pkts != 1:
                    die("QP %s frame %d: Only, want %d packets" % (qp, num, want_pkts))
                msgs += 1
                if low == READ_REQ:
                    # A READ spends a PSN per response packet: the next is unknown here.
                    expect_psn = None
            else:
                die("QP %s frame %d: unexpected opcode %#x" % (qp, num, op))
            if kind in ("read",) and low != READ_REQ:
                die("QP %s frame %d: %#x in a READ test" % (qp, num, op))
            if kind == "atomic" and low not in (CMP_SWAP, FETCH_ADD):
                die("QP %s frame %d: %#x in an atomic test" % (qp, num, op))
        if cur:
            die("QP %s: the capture ends inside a message" % qp)
    return msgs


def check_answers(kind, rows):
    """Each request is answered on the reverse QP with the PSNs the IBA gives."""
    req_last = collections.defaultdict(set)   # requester's QP (the answer's destqp)...
    answers = []
    # The answer goes to the requester's QP: pair them by PSN sets across QPs.
    for num, op, qp, psn in rows:
        low = op & 0x1f
        if low in LASTS | ONLYS | {CMP_SWAP, FETCH_ADD}:
            req_last["psn"].add(psn)
        elif low == READ_REQ:
            req_last["read"].add(psn)
        elif low in (ACK, ATOMIC_ACK, RR_FIRST, RR_ONLY):
            answers.append((num, low, psn))
    for num, low, psn in answers:
        if low in (ACK, ATOMIC_ACK) and psn not in req_last["psn"]:
            die("frame %d: ACK for PSN %d, which ends no message" % (num, psn))
        if low in (RR_FIRST, RR_ONLY) and psn not in req_last["read"]:
            die("frame %d: READ response at PSN %d, which no READ asked for" % (num, psn))
    # READ responses: First (or Only) at the request's PSN, then one PSN each.
    nxt = {}
    for num, op, qp, psn in rows:
        low = op & 0x1f
        if low in (RR_MIDDLE, RR_LAST):
            if nxt.get(qp) != psn:
                die("frame %d: READ response PSN %d, want %s" % (num, psn, nxt.get(qp)))
        if low in (RR_FIRST, RR_MIDDLE):
            nxt[qp] = (psn + 1) & 0xffffff
        elif low in (RR_LAST, RR_ONLY):
            nxt.pop(qp, None)
    return len(answers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("kind", choices=["write", "send", "read", "atomic", "ud", "rping", "cm",
                                     "any"])
    ap.add_argument("--msgs", type=int, default=1)
    ap.add_argument("--pkts", type=int, default=0)
    a = ap.parse_args()
    fs = frames(a.pcap)
    if not fs:
        die("no frames")
    whole = 0
    for i, (fr, orig) in enumerate(fs, 1):
        if len(fr) == orig:
            whole += 1
            if not icrc_ok(fr):
                die("frame %d: wrong ICRC" % i)
    rows = tshark_rows(a.pcap)
    if len(rows) != len(fs):
        die("tshark shows %d frames of %d" % (len(rows), len(fs)))
    cm = check_cm(a.pcap, rows) if a.kind == "cm" else None
    msgs = check_stream(a.kind if a.kind not in ("any", "cm") else "", rows, a.pkts)
    answered = check_answers(a.kind, rows) if a.kind != "ud" else 0
    if msgs < a.msgs:
        die("%d messages, want at least %d" % (msgs, a.msgs))
    print("capture_check: %s: %d frames (%d whole, ICRC good), %d messages, %d answers%s" %
          (a.pcap, len(fs), whole, msgs, answered,
           "; CM MADs: " + " ".join("%s %d" % kv for kv in sorted(cm.items())) if cm else ""))


main()
