#!/usr/bin/env bash
# mpi.sh [openmpi|mpich]: an MPI over UCX judges the fabric, on a fabric of
# its own ($VFAB_FABRIC): mpi_check (this folder: 8 B ping-pong latency,
# 1 MiB ping-pong bandwidth, verified MPI_Allreduce and MPI_Bcast) launched
# from node0 as a user would. Open MPI (default):
#
#   mpirun --allow-run-as-root --hostfile /run/vfab/F/hostfile -np N \
#          --mca pml ucx -x UCX_NET_DEVICES=mlx5_0:1 mpi_check
#
# -np 2 on the default 2-node fabric, then -np 4 on configs/four-nodes.yaml.
# MPICH (Debian's, ch4:ucx; mpi_check built against it as mpi_check_mpich):
#
#   mpiexec.mpich -f /run/vfab/F/hosts -n 2 -launcher ssh \
#          -genv UCX_NET_DEVICES mlx5_0:1 mpi_check_mpich
#
# on the default fabric. No binding option either way. The launchers start
# the remote ranks over ssh, so the fabric comes up with `vfab up --ssh`;
# without openssh-server the test is skipped (exit 77). Checked: one rank
# per node, the results verified, every node's mlx5_0 port counters show the
# bytes, UCX's endpoints between ranks use rc_verbs/ud_verbs on mlx5_0:1 and
# no shared memory, and the 8 B latency is that of a fabric, not of ranks
# sharing one core (each node's own CPU set).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MPI=${1:-openmpi}
F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }
case $MPI in
openmpi) PROG=$VFAB_BIN/mpi_check LAUNCHER=mpirun ;;
mpich) PROG=$VFAB_BIN/mpi_check_mpich LAUNCHER=mpiexec.mpich ;;
*) fail "usage: mpi.sh [openmpi|mpich]" ;;
esac
COUNTERS=/sys/class/infiniband/mlx5_0/ports/1/counters
# Ping-pong iterations (the 1 MiB one runs a fiftieth of them).
ITERS=${VFAB_MPI_ITERS:-2000}
# The 8 B latency a fabric shows; ranks that share a core take milliseconds.
MAX_LAT_US=${VFAB_MPI_MAX_LAT_US:-100}
# One launch at most; well inside ctest's limit for the test (300 s for
# int_mpich, 600 for int_mpi's two), so a hung launch still ends here and the
# EXIT trap takes the fabric down.
RUN_SECS=240

[ -x "$PROG" ] || fail "$PROG missing (build the tests; needs libopenmpi-dev or libmpich-dev)"
command -v "$LAUNCHER" >/dev/null || fail "$LAUNCHER not found (apt-get install openmpi-bin or mpich)"
if [ ! -x /usr/sbin/sshd ]; then
	note "openssh-server is not installed: mpirun cannot reach the other nodes; skipped"
	exit 77
fi

mpi_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap mpi_cleanup EXIT

# Checks that hold only once each node is a host of its own (its own CPUs,
# boot_id, IPC namespace, /dev/shm), collected and reported at the end so
# that every other check still runs.
HOST_FAILS=()
host_fail()
{
	echo "FAIL (node identity / CPUs): $*" >&2
	HOST_FAILS+=("$*")
}

xmit_bytes()
{
	sleep 0.6 # vfabd refreshes the nodes' counter files every 250 ms
	echo $(($(vx "$1" cat "$COUNTERS/port_xmit_data") * 4))
}

# run_np N CONFIG MIN_PAIR MIN_OTHER: up (CONFIG, or the default), mpirun -np
# N, checks, down. Ranks 0 and 1 (node0, node1) must each send MIN_PAIR
# bytes through their HCA, the others MIN_OTHER.
run_np()
{
	local np=$1 config=$2 min_pair=$3 min_other=$4 rc=0 i node min sent cfg shm
	local log=$VFAB_TMP/np$np.log
	local nodes=() before=()

	if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
		V down || fail "could not take down the stale fabric $F"
	fi
	note "vfab up --ssh ${config:-(default)}"
	V up --ssh ${config:+"$config"} >"$VFAB_TMP/up$np.log" 2>&1 ||
		{ show "$VFAB_TMP/up$np.log"; fail "vfab up failed"; }
	mapfile -t nodes <"/run/vfab/$F/hosts"
	[ "${#nodes[@]}" = "$np" ] || fail "expected $np nodes, the fabric has ${#nodes[*]}"
	for node in "${nodes[@]}"; do
		before+=("$(xmit_bytes "$node")")
	done

	if [ "$MPI" = openmpi ]; then
		note "mpirun -np $np --mca pml ucx -x UCX_NET_DEVICES=mlx5_0:1 mpi_check $ITERS"
		timeout "$RUN_SECS" "$VFAB" --fabric "$F" exec node0 -- mpirun --allow-run-as-root \
			--hostfile "/run/vfab/$F/hostfile" -np "$np" --mca pml ucx \
			-x UCX_NET_DEVICES=mlx5_0:1 -x UCX_LOG_LEVEL=info "$PROG" "$ITERS" >"$log" 2>&1 || rc=$?
	else
		note "mpiexec.mpich -n $np -launcher ssh -genv UCX_NET_DEVICES mlx5_0:1 mpi_check_mpich $ITERS"
		timeout "$RUN_SECS" "$VFAB" --fabric "$F" exec node0 -- mpiexec.mpich -f "/run/vfab/$F/hosts" \
			-n "$np" -launcher ssh -genv UCX_NET_DEVICES mlx5_0:1 -genv UCX_LOG_LEVEL info \
			"$PROG" "$ITERS" >"$log" 2>&1 || rc=$?
	fi
	[ "$rc" = 0 ] || { show "$log"; fail "$LAUNCHER -np $np exited $rc"; }
	grep -E '^(ranks|hosts|lat_8B_us|bw_1MiB_mbyte_per_s|allreduce_ok)=' "$log" | sed "s/^/    np$np: /"
	grep -qx "ranks=$np" "$log" || { show "$log"; fail "np $np: rank count"; }
	grep -qx "hosts=$np" "$log" || { show "$log"; fail "np $np: the ranks did not run on $np nodes"; }
	grep -qx "allreduce_ok=1" "$log" || { show "$log"; fail "np $np: no verified allreduce"; }
	# Open MPI's own complaints about the HCA (e.g. "matched transport list
	# but not device list") are shown; UCX must still have been chosen.
	grep -i 'warning\|not device list' "$log" | sed "s/^/    np$np: /" || true

	# Endpoints between ranks; a rank's endpoint to itself names self/.
	cfg=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$log" | grep -v 'self/' || true)
	[ -n "$cfg" ] || { show "$log"; fail "np $np: UCX printed no endpoint configuration between ranks"; }
	echo "$cfg" | sort | uniq -c | sed "s/^/    np$np: /"
	echo "$cfg" | grep -Eq '(rc_verbs|ud_verbs)/mlx5_0:1' || fail "np $np: no endpoint over mlx5_0:1"
	shm=$(echo "$cfg" | grep -Eo '(cma|sysv|posix|knem|xpmem)/[a-z0-9]*' | sort -u | tr '\n' ' ' || true)
	[ -z "$shm" ] || host_fail "np $np: UCX moves data between nodes through shared memory ($shm)"

	for i in "${!nodes[@]}"; do
		node=${nodes[$i]}
		min=$min_other
		[ "$i" -ge 2 ] || min=$min_pair
		sent=$(($(xmit_bytes "$node") - before[i]))
		echo "    np$np: $node's mlx5_0 sent $sent bytes"
		[ "$sent" -ge "$min" ] || host_fail "np $np: $node's mlx5_0 sent $sent bytes, expected >= $min"
	done
	lat=$(sed -n 's/^lat_8B_us=//p' "$log")
	num_between "$lat" 0 "$MAX_LAT_US" ||
		host_fail "np $np: 8 B latency $lat us, expected < $MAX_LAT_US us (ranks busy-polling on one shared core?)"
	V down >/dev/null || fail "vfab down"
}

# Ranks 0 and 1 exchange ITERS/50 + 10 messages of 1 MiB each way; all ranks
# take part in the 8 MiB allreduces and the 1 MiB broadcast.
pair=$(((ITERS / 50) << 20))
run_np 2 "" "$pair" 0
[ "$MPI" = mpich ] || run_np 4 "$VFAB_REPO/configs/four-nodes.yaml" "$pair" $((4 << 20))

if [ ${#HOST_FAILS[@]} -gt 0 ]; then
	echo "FAIL: ${#HOST_FAILS[@]} check(s) need each node to be a host of its own (identity, CPUs):" >&2
	printf '  %s\n' "${HOST_FAILS[@]}" >&2
	exit 1
fi
note "ok"
