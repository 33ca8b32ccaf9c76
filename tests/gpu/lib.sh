# Shared by the GPU scripts: a GPU and torch, rdma-core and the vfab build
# (env.sh), and torchrun in every node through `vfab run`.
# Expects: $repo, $out, $summary, $fabric set by the caller.

# Each line says how far into the run it came (GPU minutes are few: the next
# run's plan starts from these).
gpu_t0=${gpu_t0:-$(date +%s)}
say() { echo "$* (+$(($(date +%s) - gpu_t0)) s)" | tee -a "$summary"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "missing: $1" >&2; exit 1; }; }
need nvidia-smi
need python3
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
	{ echo "torch does not see a GPU" >&2; exit 1; }
torchrun=$(command -v torchrun || echo "python3 -m torch.distributed.run")

# rdma-core (system or carried .debs) and the vfab build.
. "$repo/tests/gpu/env.sh"

# No CUDA_VISIBLE_DEVICES: each rank takes cuda:LOCAL_RANK of its node. A node that
# lists gpus sees only its own (nodes[].gpus; on a one-GPU machine they all share
# GPU 0), a node without a list every host GPU (cuda:0 = host GPU 0 in each).
nccl_env=(PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_IB_HCA=mlx5_0)

# job_cmd NNODES EXTRA_ENV... -- ARGS: the command `vfab run` starts in every
# node: torchrun with nccl_check.py ARGS.
job_cmd() {
	local nn=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	# $NODE_RANK etc. are set per node by `vfab run`: expand them inside the node.
	local cmd="exec env ${nccl_env[*]} ${envs[*]} $torchrun --nnodes $nn --nproc_per_node 1"
	cmd+=' --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT'
	echo "$cmd $repo/tests/gpu/nccl_check.py $*"
}

# run_job NAME NNODES EXTRA_ENV... -- ARGS: torchrun in every node via vfab run
run_job() {
	local name=$1 nn=$2
	shift 2
	local log="$out/$name.log" rc
	set +e
	timeout 1200 "$vfab" --fabric "$fabric" run -- bash -c "$(job_cmd "$nn" "$@")" >"$log" 2>&1
	rc=$?
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

# check_visible NNODES WANT: torch in each node counts WANT CUDA devices.
check_visible() {
	local nn=$1 want=$2 log="$out/visible_${1}n.log"
	"$vfab" --fabric "$fabric" run -- python3 -c \
		'import torch; print("cuda_devices", torch.cuda.device_count())' >"$log" 2>&1 || true
	[ "$(grep -c "cuda_devices $want\$" "$log")" = "$nn" ]
}

peak() { sed -n 's/.*SWEEP peak_busbw_GBps=\([0-9.]*\).*/\1/p' "$1" | tail -1; }

