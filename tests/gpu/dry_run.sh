#!/usr/bin/env bash
# The GPU check on CPU (CI): everything the GPU machine does up to the first
# CUDA call, the way it does it, so that a packaging or launch mistake shows
# here and not in the few GPU minutes. rdma-core comes from the Debian .debs
# (fetched into .debs/ when missing), unpacked into a prefix even though this
# host has rdma-core (VFAB_FORCE_DEBS=1); then: the preflight without its GPU
# part, `vfab up --libdir` with the GPU scripts' 2-node config, libibverbs in
# the nodes resolved from the prefix through the nodes' own ld.so cache,
# ibv_devinfo and ib_write_bw from the prefix between the nodes, and the
# torchrun command line of run_gpu_e2e.sh through `vfab run` with
# nccl_check.py --dry-run (the ranks' environment, no torch). Where a Python
# with torch is found (Debian's python3-torch in CI), nccl_check.py itself
# then runs in the nodes on CPU tensors over gloo: the collectives' checks,
# the sweep, the DDP step, and the fault drill (fault_drill.sh), whose loop
# must end in gloo's timeout once node1's port, and so its eth0, is down;
# with openssh-server, the same ranks launched the seed's way
# (seed_launch.sh: the fabric's hostfile, ssh from node0).
#
# Usage (root, repo root): tests/gpu/dry_run.sh [--fabric NAME]   (default gdry)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
fabric=gdry
while [ $# -gt 0 ]; do
	case "$1" in
	--fabric) fabric=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
tmp=$(mktemp -d /tmp/vfab-gpu-dry.XXXXXX)
chmod 755 "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
	[ -z "${vfab:-}" ] || "$vfab" --fabric "$fabric" down >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! ls "${VFAB_DEBS:-$repo/.debs}"/*.deb >/dev/null 2>&1; then
	"$repo/tests/gpu/fetch_debs.sh" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null && "$repo/tests/gpu/fetch_debs.sh" >/dev/null; } ||
		fail "could not fetch the .debs (tests/gpu/fetch_debs.sh)"
fi
export VFAB_FORCE_DEBS=1 VFAB_RDMA_PREFIX=$tmp/prefix
. "$repo/tests/gpu/env.sh"
libdir=${libdir_args[1]}
echo "--- rdma-core from the .debs in $VFAB_RDMA_PREFIX"

"$repo/tests/gpu/preflight.sh" --no-gpu --out "$tmp" >/dev/null ||
	{ cat "$tmp/preflight.txt"; fail "the preflight failed"; }
grep -q '^ok    libibverbs' "$tmp/preflight.txt" || fail "the preflight did not see the prefix's libibverbs"
echo "--- preflight: $(grep -c '^ok' "$tmp/preflight.txt") ok"

# The GPU scripts' config: one rank and one GPU per node.
cat >"$tmp/gpu.yaml" <<YAML
version: 1
cluster:
  name: gpu
nodes:
  - {id: node0, host: 127.0.0.1, ranks: [0], gpus: [{profile: h100}]}
  - {id: node1, host: 127.0.0.1, ranks: [1], gpus: [{profile: h100}]}
YAML
# sshd in every node where openssh-server is installed: the seed's launch.
ssh_opt=()
[ ! -x /usr/sbin/sshd ] || ssh_opt=(--ssh)
"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "${ssh_opt[@]}" "$tmp/gpu.yaml" >"$tmp/up.log" 2>&1 ||
	{ cat "$tmp/up.log"; fail "vfab up --libdir"; }
vx() { "$vfab" --fabric "$fabric" exec "$@"; }

# Inside a node, with no environment variable: the prefix's libibverbs.
got=$(vx node0 ldd "$VFAB_RDMA_PREFIX/usr/bin/ibv_devinfo" | awk '/libibverbs.so.1/ {print $3}')
case "$got" in
"$libdir"/*) echo "--- node0: ibv_devinfo loads $got" ;;
*) fail "in node0 the prefix's ibv_devinfo loads libibverbs from '$got', not $libdir" ;;
esac
vx node0 env -u LD_LIBRARY_PATH "$VFAB_RDMA_PREFIX/usr/bin/ibv_devinfo" -d mlx5_0 >"$tmp/devinfo.txt" 2>&1 ||
	{ cat "$tmp/devinfo.txt"; fail "ibv_devinfo from the prefix in node0"; }
grep -q 'PORT_ACTIVE' "$tmp/devinfo.txt" || fail "ibv_devinfo from the prefix: no active port"

# NCCL opens libibverbs.so and libmlx5.so by these names: in a node, the
# prefix's, never a system rdma-core of another version (the GPU machine's
# image has one, with its -dev links).
for name in libibverbs.so libmlx5.so; do
	got=$(vx node0 python3 -c "import ctypes; ctypes.CDLL('$name'); print(next(l.split()[-1] for l in open('/proc/self/maps') if '/${name%.so}.so' in l))" 2>&1) ||
		fail "in node0 dlopen($name): $got"
	case "$got" in
	"$libdir"/*) echo "--- node0: dlopen($name) maps $got" ;;
	*) fail "in node0 dlopen($name) maps '$got', not the prefix's (in $libdir)" ;;
	esac
done

# NCCL 2.28.7-2.28.9 (the torch wheel's) die of SIGSEGV after "Initialized
# NET plugin IB" on HCAs not driven by libmlx5 unless a GIN type is set.
vx node0 grep -qx 'NCCL_GIN_TYPE=2' /etc/nccl.conf ||
	fail "node0's /etc/nccl.conf does not set NCCL_GIN_TYPE=2"
echo "--- node0: /etc/nccl.conf sets NCCL_GIN_TYPE=2"

# perftest from the prefix between the nodes.
bw="$VFAB_RDMA_PREFIX/usr/bin/ib_write_bw"
vx node1 env -u LD_LIBRARY_PATH "$bw" -d mlx5_0 -x 3 -F -n 1000 -p 18790 >"$tmp/bw.srv" 2>&1 &
srv=$!
sleep 1
vx node0 env -u LD_LIBRARY_PATH "$bw" -d mlx5_0 -x 3 -F -n 1000 -p 18790 198.18.0.2 >"$tmp/bw.cli" 2>&1 ||
	{ cat "$tmp/bw.srv" "$tmp/bw.cli"; fail "ib_write_bw from the prefix"; }
wait "$srv" || fail "the ib_write_bw server from the prefix failed"
echo "--- ib_write_bw from the prefix: $(awk '/#bytes/ {getline; print $4 " MB/s"}' "$tmp/bw.cli")"

# run_gpu_e2e.sh's launch, up to the first CUDA call.
cmd='exec env PYTHONUNBUFFERED=1 python3 '"$repo"'/tests/gpu/nccl_check.py --dry-run'
"$vfab" --fabric "$fabric" run -- bash -c "$cmd" >"$tmp/run.log" 2>&1 ||
	{ cat "$tmp/run.log"; fail "vfab run of nccl_check.py --dry-run"; }
for n in 0 1; do
	grep -q "^node$n: DRYRUN host node$n NODE_RANK=$n .*NNODES=2 .*MASTER_ADDR=198.18.0.1 " \
		"$tmp/run.log" || { cat "$tmp/run.log"; fail "node$n's rank did not get its launch environment"; }
done
echo "--- vfab run: both ranks got NODE_RANK, NNODES, MASTER_ADDR"

# The rehearsal: nccl_check.py over gloo. Ranks come from vfab run's
# variables (init_method env://), not torchrun: Debian 12's torchrun (torch
# 1.13) fails at start under Python 3.11.
py=""
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import torch.distributed as d; raise SystemExit(not d.is_gloo_available())' 2>/dev/null; then
		py=$(command -v "$p")
		break
	fi
done
if [ -z "$py" ]; then
	echo "--- no Python with torch: nccl_check.py not rehearsed"
else
	ranks='exec env PYTHONUNBUFFERED=1 RANK=$NODE_RANK WORLD_SIZE=$NNODES LOCAL_RANK=0 '"$py $repo"'/tests/gpu/nccl_check.py --backend gloo'
	"$vfab" --fabric "$fabric" run -- bash -c "$ranks --max-bytes 1048576 --ddp 5" >"$tmp/gloo.log" 2>&1 ||
		{ cat "$tmp/gloo.log"; fail "nccl_check.py over gloo"; }
	for n in 0 1; do
		grep -q "^node$n: RESULT PASS" "$tmp/gloo.log" || { cat "$tmp/gloo.log"; fail "node$n: no RESULT PASS over gloo"; }
	done
	echo "--- nccl_check.py over gloo: $(grep -c '^node0: CHECK .*PASS' "$tmp/gloo.log") checks pass on node0," \
		"$(sed -n 's/^node0: SWEEP //p' "$tmp/gloo.log")"
	"$repo/tests/gpu/fault_drill.sh" "$vfab" "$fabric" 2 node1/mlx5_0 60 "$tmp/drill.log" -- \
		"$ranks --skip-correctness --skip-sweep --loop 120 --timeout 5" >"$tmp/drill.txt" ||
		{ cat "$tmp/drill.txt" "$tmp/drill.log"; fail "the fault drill over gloo"; }
	echo "--- $(head -1 "$tmp/drill.txt")"
	if [ ${#ssh_opt[@]} = 0 ]; then
		echo "--- no openssh-server: the seed's ssh launch not rehearsed"
	else
		# ../shared/seeds/emulate-multi-node-on-one-node.md: hostfile, ssh, pdsh-style.
		"$vfab" --fabric "$fabric" exec node0 -- "$repo/tests/gpu/seed_launch.sh" \
			"/run/vfab/$fabric/hostfile" 29511 "$ranks --skip-sweep --ddp 3" \
			>"$tmp/seed.log" 2>&1 || { cat "$tmp/seed.log"; fail "the seed's ssh launch from node0"; }
		for n in 0 1; do
			grep -q "^node$n: RESULT PASS" "$tmp/seed.log" ||
				{ cat "$tmp/seed.log"; fail "the seed's launch: no RESULT PASS from node$n"; }
		done
		echo "--- the seed's launch (hostfile, ssh from node0, pdsh-style output): both ranks PASS"
	fi
fi
"$vfab" --fabric "$fabric" down >/dev/null
echo "GPU dry run: PASS"
