#!/usr/bin/env python3
"""victim.py: a bystander process for hostile.sh (issue 27 High #3).

Holds 16 MiB filled with one byte value, prints "PID ADDRESS" of it, waits
until its standard input closes and exits 0 when every byte is still the
same, 1 (naming how many changed) otherwise.
"""
import ctypes
import os
import sys

SIZE = 16 << 20
FILL = 0x5A

buf = ctypes.create_string_buffer(bytes([FILL]) * SIZE, SIZE)
print(os.getpid(), ctypes.addressof(buf), flush=True)
sys.stdin.read()
changed = SIZE - buf.raw[:SIZE].count(bytes([FILL]))
if changed:
    print(f"victim: {changed} of {SIZE} bytes changed", flush=True)
    sys.exit(1)
print("victim: untouched", flush=True)
