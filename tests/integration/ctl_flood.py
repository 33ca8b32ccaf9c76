#!/usr/bin/env python3
# ctl_flood.py SOCKET KIB: one client of vfabd's control socket that sends KIB
# KiB of STATUS requests and reads no reply, then holds the connection open
# until killed (the unfair client of tests/integration/liveness.sh).
import signal
import socket
import sys

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
chunk = b"STATUS\n" * (4096 // 7)
left = int(sys.argv[2]) << 10
print("flooding", flush=True)
try:
    while left > 0:
        sock.sendall(chunk)
        left -= len(chunk)
except OSError:
    pass  # vfabd shut the connection: also fine
print("sent", flush=True)
signal.pause()
