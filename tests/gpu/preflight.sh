#!/usr/bin/env bash
# The GPU machine's first minute: what the machine is and whether vfab can run
# there, before any GPU time goes to NCCL. Seconds; each part is saved as soon
# as it is known, so a machine lost halfway still leaves it.
#
# Usage (root, repo root): tests/gpu/preflight.sh [--out DIR] [--no-gpu]
#   kernel and OS; `vfab doctor` (namespaces, veth and bridge, a namespace's
#   own sysfs with a tmpfs over /sys/class, overlayfs, process_vm_writev,
#   ptrace scope, /dev/shm, cpuset, /dev/fuse, libibverbs with the carried
#   .debs when the host has no rdma-core); torch, CUDA and NCCL versions and
#   the GPUs (nvidia-smi). --no-gpu: the last part is skipped (the CPU dry run).
# Writes DIR/preflight.txt (default tests/gpu/results). Exit: 0 all good,
# 1 vfab cannot run here (the FAIL lines say which part needs what),
# 3 no usable GPU or torch.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out="$repo/tests/gpu/results"
gpu=1
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--no-gpu) gpu=0; shift ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
report="$out/preflight.txt"
: >"$report"
say() { echo "$*" | tee -a "$report"; }

say "# preflight $(date -u +%FT%TZ)"
say "kernel: $(uname -srm)"
say "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
say "cpus: $(nproc), memory: $(awk '/MemTotal/ {printf "%d MiB", $2 / 1024}' /proc/meminfo)"
. "$repo/tests/gpu/env.sh"
say "rdma-core: ${libdir_args[1]:-system}"
rc=0
"$vfab" doctor 2>&1 | tee -a "$report" || rc=$?
if [ "$rc" != 0 ]; then
	say "preflight: vfab cannot run on this machine (see the FAIL lines); stopping here"
	exit 1
fi
[ "$gpu" = 1 ] || { say "preflight: GPU part skipped (--no-gpu)"; exit 0; }
if ! command -v nvidia-smi >/dev/null; then
	say "preflight: no nvidia-smi"
	exit 3
fi
nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv 2>&1 |
	tee -a "$report" || true
python3 - 2>&1 <<'PY' | tee -a "$report" || rc=$?
import sys
try:
    import torch
except Exception as e:
    print(f"torch: cannot import ({e})")
    sys.exit(3)
print(f"python: {sys.version.split()[0]}")
print(f"torch: {torch.__version__}, CUDA {torch.version.cuda}, available {torch.cuda.is_available()}")
if not torch.cuda.is_available():
    sys.exit(3)
print(f"nccl: {'.'.join(map(str, torch.cuda.nccl.version()))}")
for i in range(torch.cuda.device_count()):
    print(f"gpu {i}: {torch.cuda.get_device_name(i)}")
PY
if [ "$rc" != 0 ]; then
	say "preflight: torch does not see a GPU"
	exit 3
fi
say "preflight: ok"
