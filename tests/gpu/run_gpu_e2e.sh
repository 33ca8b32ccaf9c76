#!/usr/bin/env bash
# NCCL end-to-end over vfab on a GPU machine: unmodified torchrun/NCCL in 2
# and then 4 virtual nodes, talking through NCCL's IB transport over emulated
# RoCE HCAs. Each node lists one GPU (nodes[].gpus): node i gets host GPU
# i mod #GPUs and sees only it (on a one-GPU machine they all share GPU 0);
# every rank uses cuda:LOCAL_RANK, no CUDA_VISIBLE_DEVICES.
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
# Then, on the default fabric: HCA filtering, a wrong GID index, a DDP
# training step and the fault drill (tests/gpu/fault_drill.sh).
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
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
# First, in seconds: can vfab run on this machine at all (saved in preflight.txt).
"$repo/tests/gpu/preflight.sh" --out "$out"
summary="$out/summary.md"
: >"$summary"

fabric=gpu
. "$repo/tests/gpu/lib.sh"
cleanup() { "$vfab" --fabric "$fabric" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

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
	"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$cfg" | tee "$out/up_${nn}n.log"
	say "## $nn nodes ($nodes), one GPU each"
	grep ' gpus: ' "$out/up_${nn}n.log" >>"$summary" || true
	if check_visible "$nn" 1; then
		say "every node sees exactly one CUDA device (its own)"
	else
		say "GPU visibility per node: FAIL (see visible_${nn}n.log)"; fail=1
	fi
	if run_job "ib_${nn}n" "$nn" -- --max-bytes "$max_bytes"; then
		say "correctness + sweep over NET/IB: PASS"
	else
		say "correctness/sweep over NET/IB: FAIL (see ib_${nn}n.log)"; fail=1
	fi
	prove_ib "$out/ib_${nn}n.log" "$nn" || fail=1
	grep -E '^node0: +[0-9]+ +[0-9]+' "$out/ib_${nn}n.log" | sed 's/^node0: //' >"$out/sweep_ib_${nn}n.txt" || true
	if run_job "socket_${nn}n" "$nn" NCCL_NET=Socket -- --skip-correctness --max-bytes "$max_bytes"; then
		ib=$(peak "$out/ib_${nn}n.log"); so=$(peak "$out/socket_${nn}n.log")
		ratio=$(python3 -c "import sys; i, s = sys.argv[1:]; print(f'{float(i) / float(s):.2f}' if i and s and float(s) else 'n/a')" "$ib" "$so")
		say "peak all_reduce busbw: IB ${ib:-none} GB/s, Socket ${so:-none} GB/s, ratio $ratio"
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

# NCCL_IB_HCA filtering and a wrong GID index, on the default 2-node fabric
# (with sshd in every node where openssh-server is installed: the seed's launch).
ssh_opt=()
[ ! -x /usr/sbin/sshd ] || ssh_opt=(--ssh)
"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "${ssh_opt[@]}"
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
elif grep -E 'Signal [0-9]+ \(SIG[A-Z]+\) received' "$out/wrong_gid.log" >/dev/null; then
	# A rank killed by a signal is no error NCCL reported, as hardware would make it.
	say "wrong GID index: a rank died of a signal, not of NCCL's error:"
	grep -E 'Signal [0-9]+ \(SIG' "$out/wrong_gid.log" | head -2 >>"$summary"; fail=1
else
	say "wrong GID index failed as on hardware after $(($(date +%s) - start)) s:"
	grep -E 'status=|NET/IB.*(error|Error)|ncclRemoteError|Got completion' "$out/wrong_gid.log" | head -5 >>"$summary"
fi

# A training step: a small model under DistributedDataParallel, 2 nodes.
if run_job ddp_2n 2 -- --skip-correctness --skip-sweep --ddp 20; then
	say "DDP: 20 steps, parameters equal on both ranks and to one process's: PASS"
	grep -E '^node0: DDP ' "$out/ddp_2n.log" | sed 's/^node0: //' >>"$summary" || true
else
	say "DDP step: FAIL (see ddp_2n.log)"; fail=1
fi

# ../shared/seeds/emulate-multi-node-on-one-node.md: the fabric's hostfile,
# ssh from node0 to every host, pdsh-style output, NCCL over IB.
if [ ${#ssh_opt[@]} = 0 ]; then
	say "seed launch (hostfile + ssh): skipped, no openssh-server on this machine"
elif "$vfab" --fabric "$fabric" exec node0 -- "$repo/tests/gpu/seed_launch.sh" \
	"/run/vfab/$fabric/hostfile" 29512 "$(job_cmd 2 -- --skip-sweep)" >"$out/seed_launch.log" 2>&1 &&
	prove_ib "$out/seed_launch.log" 2; then
	say "seed launch (hostfile, ssh from node0, pdsh-style): correctness over NET/IB PASS"
else
	say "seed launch: FAIL (see seed_launch.log)"; fail=1
fi

# Fault drill: node1's HCA goes down in the middle of an all_reduce loop.
# NCCL_IB_TIMEOUT=14, NCCL_IB_RETRY_CNT=7: 4.096 us * 2^14 * 8 = 0.54 s of
# retries before the completion error; then torch's watchdog ends the ranks.
say "fault drill (node1/mlx5_0 down mid all_reduce; NCCL's retries take 0.54 s):"
if "$repo/tests/gpu/fault_drill.sh" "$vfab" "$fabric" 2 node1/mlx5_0 60 "$out/fault_drill.log" -- \
	"$(job_cmd 2 NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=7 -- --skip-correctness --skip-sweep --loop 300)" \
	>>"$summary" 2>&1; then
	say "fault drill: the job ended with an error"
else
	say "fault drill: FAIL (see fault_drill.log)"; fail=1
fi
"$vfab" --fabric "$fabric" down

cat "$summary"
exit $fail
