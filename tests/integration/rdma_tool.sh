#!/usr/bin/env bash
# Unmodified iproute2 `rdma` inside the nodes, over NETLINK_RDMA as the
# preload library answers it (rdmanl/): devices, links with their netdevs,
# the system's modes, live resources of a running ib_write_bw pair (each
# side's QP names the other's as its peer), keys only for root, hw counters,
# and the resources gone with their process.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=18591
out=$VFAB_TMP/out

# check FILE PYTHON-EXPR...: each expression holds for `j`, FILE's JSON.
check()
{
	local file=$1
	shift
	python3 - "$file" "$@" <<'PY' || { show "$file"; fail "rdma's JSON in $(basename "$file")"; }
import json, sys
j = json.load(open(sys.argv[1]))
for expr in sys.argv[2:]:
    if not eval(expr):
        print("not true:", expr)
        sys.exit(1)
PY
}

for node in node0 node1; do
	guid=$(vx "$node" cat /sys/class/infiniband/mlx5_0/node_guid)
	vx "$node" rdma -j dev >"$out.dev.$node" 2>&1 || { show "$out.dev.$node"; fail "rdma dev"; }
	check "$out.dev.$node" 'len(j) == 1' 'j[0]["ifname"] == "mlx5_0"' \
		'j[0]["node_type"] == "ca"' "j[0]['node_guid'] == '$guid'" 'j[0]["fw"]'
	vx "$node" rdma -j link >"$out.link.$node" 2>&1 || { show "$out.link.$node"; fail "rdma link"; }
	check "$out.link.$node" 'len(j) == 1' 'j[0]["ifname"] == "mlx5_0"' 'j[0]["port"] == 1' \
		'j[0]["state"] == "ACTIVE"' 'j[0]["physical_state"] == "LINK_UP"' \
		'j[0]["netdev"] == "eth0"'
done
vx node0 rdma link show mlx5_0/1 >"$out.text" 2>&1 || { show "$out.text"; fail "rdma link show"; }
grep -qx 'link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0 ' "$out.text" ||
	{ show "$out.text"; fail "rdma link's line differs from a RoCE port's"; }
vx node0 rdma system >"$out.sys" 2>&1 || { show "$out.sys"; fail "rdma system"; }
grep -q '^netns shared copy-on-fork on' "$out.sys" || { show "$out.sys"; fail "rdma system"; }
# Changes are refused as an unchangeable device refuses them.
if vx node0 rdma system set netns exclusive >"$out.set" 2>&1; then
	fail "rdma system set succeeded"
fi
grep -q 'Operation not supported' "$out.set" || { show "$out.set"; fail "rdma system set's error"; }
note "rdma dev, link and system describe each node's mlx5_0 as sysfs does"

# A running pair: each QP names the other as its peer.
start_server node1 "$VFAB_TMP/server" ib_write_bw -d mlx5_0 -x 3 -D 4 -p "$port"
wait_listen node1 "$port" || { show "$VFAB_TMP/server"; fail "server did not start"; }
vx node0 ib_write_bw -d mlx5_0 -x 3 -D 4 -p "$port" "$NODE1_IP" >"$VFAB_TMP/client" 2>&1 &
client=$!
VFAB_SERVER_PIDS+=("$client")
for _ in $(seq 100); do
	vx node0 rdma -j res show qp >"$out.qp0" 2>&1 || true
	grep -q '"state":"RTS"' "$out.qp0" && break
	sleep 0.1
done
# Every view taken while the pair runs (-D 4), the checks after: each check
# starts a Python, which takes longer than the pair lives on a slow host.
vx node1 rdma -j res show qp >"$out.qp1" 2>&1 || { show "$out.qp1"; fail "rdma res show qp"; }
vx node1 rdma -j res show mr >"$out.mr" 2>&1 || { show "$out.mr"; fail "rdma res show mr"; }
vx node1 setpriv --reuid=65534 --regid=65534 --clear-groups rdma -j res show mr >"$out.mr_user" 2>&1 ||
	{ show "$out.mr_user"; fail "rdma res show mr as nobody"; }
for what in cq pd; do
	vx node1 rdma -j res show "$what" >"$out.$what" 2>&1 || { show "$out.$what"; fail "rdma res show $what"; }
done
check "$out.qp0" 'len(j) == 1' 'j[0]["type"] == "RC"' 'j[0]["state"] == "RTS"' \
	'j[0]["comm"] == "ib_write_bw"' 'j[0]["port"] == 1'
check "$out.qp1" 'len(j) == 1' 'j[0]["comm"] == "ib_write_bw"' "j[0]['state'] in ('RTR', 'RTS')"
l0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["lqpn"])' "$out.qp0")
l1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["lqpn"])' "$out.qp1")
check "$out.qp0" "j[0]['rqpn'] == $l1"
check "$out.qp1" "j[0]['rqpn'] == $l0"
check "$out.mr" 'len(j) == 1' '"rkey" in j[0]' 'j[0]["mrlen"] > 0'
check "$out.mr_user" 'len(j) == 1' '"rkey" not in j[0]' '"iova" not in j[0]'
for what in cq pd; do
	check "$out.$what" 'len(j) >= 1' 'j[0]["comm"] == "ib_write_bw"' 'j[0]["users"] >= 1'
done
note "rdma res shows the pair's QPs (peers $l0 <-> $l1), MR, CQ and PD; keys to root only"

wait_pid "$client" 30 || { show "$VFAB_TMP/client"; fail "client failed"; }
wait_pid "$SERVER_PID" 30 || { show "$VFAB_TMP/server"; fail "server failed"; }
vx node1 rdma -j statistic show link mlx5_0/1 >"$out.stat" 2>&1 || { show "$out.stat"; fail "rdma statistic"; }
check "$out.stat" 'j[0]["rx_write_requests"] > 0' '"lifespan" not in j[0]'
vx node1 rdma res >"$out.res" 2>&1 || { show "$out.res"; fail "rdma res"; }
grep -q '^0: mlx5_0: pd 0 cq 0 qp 0 mr 0 srq 0' "$out.res" || { show "$out.res"; fail "resources outlived their process"; }
note "rdma statistic counts the WRITEs received; rdma res is empty once the pair exited"
