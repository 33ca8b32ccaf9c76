#!/usr/bin/env bash
# Runs inside the vfab image (tests/container/build_and_run.sh mounts this
# folder read-only at /t): the documented commands of docs/CONTAINER.md,
# checked. One fabric, named FABRIC; each step prints "== step" first, the
# results as "RESULT key: value" lines for the caller.
#
#   in_container.sh FABRIC     doctor, up, ibv_devinfo, ib_write_bw and rping
#                              node0 -> node1, pyverbs, CPU sets, loss (tc +
#                              bpf(2) or netem), up --ssh and ssh node1, down
set -uo pipefail
fabric=$1
node1_ip=198.18.0.2

v()
{
	vfab --fabric "$fabric" "$@"
}
step()
{
	printf '== %s\n' "$*"
}
result()
{
	printf 'RESULT %s: %s\n' "$1" "$2"
}
fail()
{
	echo "FAILED: $*"
	v down >/dev/null 2>&1
	exit 1
}
# server LOG CMD...: CMD in node1 in the background; its pid in $srv.
server()
{
	local log=$1
	shift
	v exec node1 -- "$@" >"$log" 2>&1 &
	srv=$!
	sleep 1
}

step "vfab doctor"
vfab doctor >/tmp/doctor.txt
rc=$?
cat /tmp/doctor.txt
[ "$rc" = 0 ] || fail "vfab doctor exited $rc"

step "vfab up"
v up || fail "vfab up"

step "vfab exec node0 -- ibv_devinfo -d mlx5_0"
v exec node0 -- ibv_devinfo -d mlx5_0 | tee /tmp/devinfo.txt
grep -q PORT_ACTIVE /tmp/devinfo.txt || fail "ibv_devinfo: no active port"
result ibv_devinfo "$(grep -c PORT_ACTIVE /tmp/devinfo.txt) port PORT_ACTIVE"

step "ib_write_bw -d mlx5_0 -x 3 -n 1000, node0 -> node1"
server /tmp/bw.srv ib_write_bw -d mlx5_0 -x 3 -F -n 1000 -p 18771
timeout 60 vfab --fabric "$fabric" exec node0 -- ib_write_bw -d mlx5_0 -x 3 -F -n 1000 -p 18771 \
	"$node1_ip" >/tmp/bw.cli 2>&1 || { cat /tmp/bw.srv /tmp/bw.cli; fail "ib_write_bw"; }
wait "$srv" || { cat /tmp/bw.srv; fail "the ib_write_bw server"; }
grep -A1 '#bytes' /tmp/bw.cli
result ib_write_bw "$(awk '/#bytes/ { getline; print $4 " MB/s (BW average, " $1 " B, " $2 " iterations)" }' /tmp/bw.cli)"

step "rping over the RDMA CM, node0 -> node1"
server /tmp/rping.srv rping -s -a "$node1_ip" -C 3 -v
timeout 60 vfab --fabric "$fabric" exec node0 -- rping -c -a "$node1_ip" -C 3 -v >/tmp/rping.cli 2>&1 ||
	{ cat /tmp/rping.srv /tmp/rping.cli; fail "rping"; }
wait "$srv" || { cat /tmp/rping.srv; fail "the rping server"; }
[ "$(grep -c 'ping data' /tmp/rping.cli)" = 3 ] || { cat /tmp/rping.cli; fail "rping: not 3 pings"; }
result rping "3 pings"

step "pyverbs in node0"
v exec node0 -- python3 -c 'import pyverbs.device as d
print(" ".join(x.name.decode() for x in d.get_device_list()))' >/tmp/pyverbs.txt 2>&1 ||
	{ cat /tmp/pyverbs.txt; fail "pyverbs"; }
grep -qx mlx5_0 /tmp/pyverbs.txt || { cat /tmp/pyverbs.txt; fail "pyverbs does not list mlx5_0"; }
result pyverbs "get_device_list: $(cat /tmp/pyverbs.txt)"

step "the nodes' CPUs"
v status | sed -n '/NODE/,$p'
if [ -f "/run/vfab/$fabric/nodes/node0/cgroup" ]; then
	result cpus "cpuset cgroup $(cat "/run/vfab/$fabric/nodes/node0/cgroup"), node1 nproc $(v exec node1 -- nproc)"
else
	# vfab up falls back to affinity silently: the doctor is what says so.
	grep -q '^ok    cpuset cgroup' /tmp/doctor.txt && fail "no node cgroup, yet doctor said ok"
	result cpus "no writable cpuset cgroup: affinity only, node1 nproc $(v exec node1 -- nproc)"
fi

step "vfab shape node0/mlx5_0 loss=0.01 (IP loss: netem, else tc + bpf(2))"
v shape node0/mlx5_0 loss=0.01 || fail "vfab shape"
v shape node0/mlx5_0 loss=0 || fail "vfab shape loss=0"
result shape "loss=0.01 set and cleared"

step "vfab up --ssh: ssh node1 from node0 (MPI, pdsh, DeepSpeed launchers)"
v down >/dev/null || fail "vfab down before vfab up --ssh"
v up --ssh >/dev/null || fail "vfab up --ssh"
out=$(timeout 60 vfab --fabric "$fabric" exec node0 -- ssh node1 hostname 2>&1) ||
	fail "ssh node1 from node0: $out"
[ "$out" = node1 ] || fail "ssh node1 hostname printed '$out'"
result ssh "node0: ssh node1 hostname -> $out"

step "vfab down"
v down || fail "vfab down"
[ ! -e "/run/vfab/$fabric" ] || fail "vfab down left /run/vfab/$fabric"
result down ok
echo "ALL OK"
