#!/usr/bin/env bash
# NCCL end-to-end over vfab on a GPU machine: unmodified torchrun/NCCL in 2
# and then 4 virtual nodes that all share GPU 0, talking through NCCL's IB
# transport over emulated RoCE HCAs.
#
# Usage (as root, from the repo root):
#   tests/gpu/run_gpu_e2e.sh [--out DIR] [--max-bytes N] [--quick]
#
# Needs: nvidia-smi, python3 with torch (CUDA) and torchrun. rdma-core need
# not be installed: if libibverbs.so.1 is missing, the Debian .debs in
# $VFAB_DEBS (default .debs/: libibverbs1, ibverbs-providers, perftest,
# libnl-3-200, libnl-route-3-200, libyaml-0-2; fetch them on a Debian 12
# machine with `tests/gpu/fetch_debs.sh`) are unpacked with dpkg -x and the
# nodes' own ld.so cache is pointed at them (`vfab up --libdir`), so nothing
# inside a node needs an environment variable.
#
# Results (tables, NCCL log lines) go to tests/gpu/results/ by default.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
out="$repo/tests/gpu/results"
max_bytes=$((1 << 30))
quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--max-bytes) max_bytes=$2; shift 2 ;;
	--quick) quick=1; max_bytes=$((64 << 20)); shift ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
summary="$out/summary.md"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

need() { command -v "$1" >/dev/null 2>&1 || { echo "missing: $1" >&2; exit 1; }; }
need nvidia-smi
need python3
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
	{ echo "torch does not see a GPU" >&2; exit 1; }
torchrun=$(command -v torchrun || echo "python3 -m torch.distributed.run")

# --- rdma-core: the system's, or carried .debs ---------------------------------
libdir_args=()
prefix=/opt/vfab-rdma
if ! ldconfig -p | grep -q 'libibverbs.so.1 '; then
	debs=${VFAB_DEBS:-$repo/.debs}
	ls "$debs"/*.deb >/dev/null 2>&1 || { echo "no libibverbs and no .debs in $debs" >&2; exit 1; }
	mkdir -p "$prefix"
	for d in "$debs"/*.deb; do dpkg -x "$d" "$prefix"; done
	libdir_args=(--libdir "$prefix/usr/lib/x86_64-linux-gnu")
	export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export PATH="$prefix/usr/bin:$PATH"
fi

# --- vfab build: the carried one, or build here ---------------------------------
vfab="$repo/build/bin/vfab"
if [ ! -x "$vfab" ]; then
	need cmake
	cmake -S "$repo" -B "$repo/build" -DVFAB_BUILD_TESTS=OFF >/dev/null
	cmake --build "$repo/build" -j"$(nproc)" >/dev/null
fi
fabric=gpu
cleanup() { "$vfab" --fabric "$fabric" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

nccl_env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_IB_HCA=mlx5_0 VFAB_GPU=0
	CUDA_VISIBLE_DEVICES=0)

# run_job NAME NNODES EXTRA_ENV... -- ARGS: torchrun in every node via vfab run
run_job() {
	local name=$1 nn=$2
	shift 2
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	local log="$out/$name.log"
	# $NODE_RANK etc. are set per node by `vfab run`: expand them inside the node.
	local cmd="exec env ${nccl_env[*]} ${envs[*]} $torchrun --nnodes $nn --nproc_per_node 1"
	cmd+=' --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT'
	cmd+=" $repo/tests/gpu/nccl_check.py $*"
	set +e
	timeout 1200 "$vfab" --fabric "$fabric" run -- bash -c "$cmd" >"$log" 2>&1
	local rc=$?
	set -e
	return $rc
}

# prove_ib LOG NNODES: NET/IB on mlx5_0 with RoCE, nNodes N, never Socket/P2P/SHM between nodes
prove_ib() {
	local log=$1 nn=$2 ok=0
	grep -E 'NET/IB ?: Using \[0\]mlx5_0:1/RoCE' "$log" >/dev/null || { echo "no 'NET/IB : Using [0]mlx5_0:1/RoCE'"; ok=1; }
	grep -E "nNodes $nn" "$log" >/dev/null || { echo "no 'nNodes $nn'"; ok=1; }
	grep -E 'via NET/IB' "$log" >/dev/null || { echo "no channel 'via NET/IB'"; ok=1; }
	if grep -E 'via (P2P|SHM)|NET/Socket : Using|Using network Socket' "$log" >/dev/null; then
		echo "found P2P/SHM/Socket between nodes"; ok=1
	fi
	grep -E 'NET/IB ?: Using|Using network|nNodes|via NET' "$log" | sort -u | head -20 >>"$summary"
	return $ok
}

peak() { sed -n 's/.*SWEEP peak_busbw_GBps=\([0-9.]*\).*/\1/p' "$1" | tail -1; }

fail=0
for nn in 2 4; do
	nodes=$(seq -s, 0 $((nn - 1)) | sed 's/\([0-9]\+\)/node\1/g')
	cfg=$(mktemp --suffix=.yaml)
	python3 - "$nn" >"$cfg" <<'EOF'
import sys
n = int(sys.argv[1])
print("version: 1\ncluster:\n  name: gpu\nnodes:")
for i in range(n):
    print(f"  - id: node{i}\n    host: 127.0.0.1\n    ranks: [{i}]\n    gpus:\n      - profile: h100")
EOF
	"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$cfg"
	say "## $nn nodes ($nodes), all on GPU 0"
	if run_job "ib_${nn}n" "$nn" -- --max-bytes "$max_bytes"; then
		say "correctness + sweep over NET/IB: PASS"
	else
		say "correctness/sweep over NET/IB: FAIL (see ib_${nn}n.log)"; fail=1
	fi
	prove_ib "$out/ib_${nn}n.log" "$nn" || fail=1
	grep -E '^node0: +[0-9]+ +[0-9]+' "$out/ib_${nn}n.log" | sed 's/^node0: //' >"$out/sweep_ib_${nn}n.txt" || true
	if run_job "socket_${nn}n" "$nn" NCCL_NET=Socket -- --skip-correctness --max-bytes "$max_bytes"; then
		ib=$(peak "$out/ib_${nn}n.log"); so=$(peak "$out/socket_${nn}n.log")
		say "peak all_reduce busbw: IB ${ib} GB/s, Socket ${so} GB/s, ratio $(python3 -c "print(f'{$ib/$so:.2f}' if $so else 'n/a')")"
	else
		say "NCCL_NET=Socket sweep failed"; fail=1
	fi
	"$vfab" --fabric "$fabric" down
	rm -f "$cfg"
done

# Shaped links: busbw next to the configured rate (Ring), 2 nodes.
for gbps in 100 200; do
	cfg=$(mktemp --suffix=.yaml)
	cat >"$cfg" <<EOF
version: 1
cluster:
  name: gpu
nodes:
  - id: node0
    host: 127.0.0.1
    ranks: [0]
    gpus: [{profile: h100}]
  - id: node1
    host: 127.0.0.1
    ranks: [1]
    gpus: [{profile: h100}]
fabric:
  inter_node:
    type: roce
    bandwidth_gbps: $gbps
    latency_us: 2
EOF
	"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$cfg"
	if run_job "shaped_${gbps}" 2 NCCL_ALGO=Ring -- --skip-correctness --min-bytes $((1 << 20)) --max-bytes "$max_bytes"; then
		p=$(peak "$out/shaped_${gbps}.log")
		say "shaped ${gbps} Gb/s: peak busbw ${p} GB/s = $(python3 -c "print(f'{$p*8:.1f}')") Gb/s"
	else
		say "shaped ${gbps} Gb/s run failed"; fail=1
	fi
	"$vfab" --fabric "$fabric" down
	rm -f "$cfg"
done

# NCCL_IB_HCA filtering and a wrong GID index, on the default 2-node fabric.
"$vfab" --fabric "$fabric" up "${libdir_args[@]}"
if run_job hca_filter_excluded 2 NCCL_IB_HCA=^mlx5_0 -- --skip-correctness --max-bytes 1048576; then
	if grep -q 'NET/IB : No device found' "$out/hca_filter_excluded.log"; then
		say "NCCL_IB_HCA=^mlx5_0: no IB device, NCCL fell back as on hardware"
	else
		say "NCCL_IB_HCA=^mlx5_0 did not exclude the HCA"; fail=1
	fi
else
	say "NCCL_IB_HCA=^mlx5_0 run failed (expected a fallback, not a failure)"
fi
start=$(date +%s)
if run_job wrong_gid 2 NCCL_IB_GID_INDEX=9 NCCL_IB_TIMEOUT=8 NCCL_IB_RETRY_CNT=1 -- --skip-sweep; then
	say "wrong GID index (9: an empty entry): unexpectedly worked"; fail=1
else
	say "wrong GID index failed as on hardware after $(($(date +%s) - start)) s:"
	grep -E 'status=|NET/IB.*(error|Error)|ncclRemoteError|Got completion' "$out/wrong_gid.log" | head -5 >>"$summary"
fi
"$vfab" --fabric "$fabric" down

cat "$summary"
exit $fail
