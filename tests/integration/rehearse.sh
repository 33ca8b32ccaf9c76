#!/usr/bin/env bash
# Rehearsal scenarios, on fabrics of their own ($VFAB_FABRIC with the default
# config, $VFAB_FABRIC_RUNAI with configs/runai-roce.yaml):
#  (a) `ip addr add/del` inside a node changes its HCA's GID table within 1 s
#      (sysfs gids/, gid_attrs/, ibv_devinfo) and ibv_asyncwatch, started
#      before, sees IBV_EVENT_GID_CHANGE; the new GID index carries traffic
#      to a peer that has an address in the same subnet; indices follow the
#      kernel's rules (order of addition, holes reused, nothing moves);
#  (c) a wrong GID index fails in perftest the way it fails on hardware,
#      while the right one works;
#  (d) psn_check: a requester PSN ahead of the responder's and a wrong dest
#      QPN end in IBV_WC_RETRY_EXC_ERR after the time timeout/retry_cnt imply;
#      one behind it makes duplicates: WRITE/SEND complete unexecuted, READ
#      returns the bytes, FETCH_ADD fails, hw_counters/duplicate_request grows;
#  (b) runai-roce.yaml: the seed's one-liners (seeds/runai-multinode-roce-
#      nccl.txt), verbatim inside the nodes, print an index other than 3 whose
#      GID is the node's IPv4-mapped address with type RoCE v2, and
#      `ib_write_bw -x <that index>` works; index 3 is an IPv6 RoCE v2 GID in
#      the same /64 on the same segment, which works on hardware too.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
FR=${VFAB_FABRIC_RUNAI:-${F}r}
V() { "$VFAB" --fabric "$F" "$@"; }
VR() { "$VFAB" --fabric "$FR" "$@"; }

rehearse_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
	VR down >/dev/null 2>&1 || true
}
trap rehearse_cleanup EXIT

for fab in "$F" "$FR"; do
	if [ -e "/run/vfab/$fab" ] || [ -e "/dev/shm/vfab-$fab" ]; then
		note "a previous run left fabric $fab behind; taking it down first"
		"$VFAB" --fabric "$fab" down || fail "could not take down the stale fabric $fab"
	fi
done

# view FABRIC NODE HCA FILE: a file of the node's sysfs view, read on the host
# side of the bind mount (no process start: the 1 s deadlines stay exact).
view()
{
	cat "/run/vfab/$1/nodes/$2/class/infiniband/$3/ports/1/$4"
}

# wait_view FABRIC NODE HCA FILE TEXT MS: until FILE reads TEXT; fails after MS.
wait_view()
{
	local t0=$(($(date +%s%N) / 1000000)) now
	while :; do
		[ "$(view "$1" "$2" "$3" "$4" 2>/dev/null)" = "$5" ] && return 0
		now=$(($(date +%s%N) / 1000000))
		[ $((now - t0)) -lt "$6" ] || return 1
		sleep 0.02
	done
}

# entry NODE IDX GID TYPE NDEV: gids/IDX, types/IDX and ndevs/IDX of node's
# mlx5_0 on fabric $F reach these values within 1 s.
entry()
{
	local node=$1 idx=$2
	wait_view "$F" "$node" mlx5_0 "gids/$idx" "$3" 1000 ||
		fail "$node: gids/$idx is '$(view "$F" "$node" mlx5_0 "gids/$idx")' after 1 s, expected '$3'"
	wait_view "$F" "$node" mlx5_0 "gid_attrs/types/$idx" "$4" 1000 ||
		fail "$node: gid_attrs/types/$idx is '$(view "$F" "$node" mlx5_0 "gid_attrs/types/$idx")', expected '$4'"
	wait_view "$F" "$node" mlx5_0 "gid_attrs/ndevs/$idx" "$5" 1000 ||
		fail "$node: gid_attrs/ndevs/$idx is '$(view "$F" "$node" mlx5_0 "gid_attrs/ndevs/$idx")', expected '$5'"
}

# count_events: GID_CHANGE lines ibv_asyncwatch printed so far.
count_events()
{
	grep -c 'event_type IBV_EVENT_GID_CHANGE (18), port 1' "$VFAB_TMP/asyncwatch.log" || true
}

wait_events()
{
	local want=$1
	for _ in $(seq 50); do
		[ "$(count_events)" -ge "$want" ] && return 0
		sleep 0.02
	done
	return 1
}

EMPTY=0000:0000:0000:0000:0000:0000:0000:0000
NEW0=0000:0000:0000:0000:0000:ffff:c613:0501 # ::ffff:198.19.5.1
NEW1=0000:0000:0000:0000:0000:ffff:c613:0502 # ::ffff:198.19.5.2

note "vfab up (default config) as $F"
V up >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }
F_SAVE=$VFAB_FABRIC
VFAB_FABRIC=$F # vx and start_server act on this fabric

# --- (a) runtime address changes -----------------------------------------------------
for i in 4 5 6 7; do
	[ "$(view "$F" node0 mlx5_0 "gids/$i")" = "$EMPTY" ] || fail "node0: gids/$i is not empty before the test"
done
start_asyncwatch node0 "$VFAB_TMP/asyncwatch.log"
watch_pid=$SERVER_PID

note "(a) node0: ip addr add 198.19.5.1/24 dev eth0"
vx node0 ip addr add 198.19.5.1/24 dev eth0 || fail "ip addr add in node0"
entry node0 4 "$NEW0" "IB/RoCE v1" eth0
entry node0 5 "$NEW0" "RoCE v2" eth0
entry node0 3 0000:0000:0000:0000:0000:ffff:c612:0001 "RoCE v2" eth0
[ "$(view "$F" node0 mlx5_0 gids/6)" = "$EMPTY" ] || fail "node0: gids/6 is no longer empty"
# What programs in the node see: the bind-mounted view and ibv_query_gid.
[ "$(vx node0 cat /sys/class/infiniband/mlx5_0/ports/1/gids/5)" = "$NEW0" ] ||
	fail "node0: /sys/class/infiniband/mlx5_0/ports/1/gids/5 inside the node differs"
vx node0 ibv_devinfo -v -d mlx5_0 >"$VFAB_TMP/devinfo.add" 2>&1 || { show "$VFAB_TMP/devinfo.add"; fail "ibv_devinfo"; }
grep -Eq $'GID\\[  5\\]:\t+::ffff:198\\.19\\.5\\.1, RoCE v2$' "$VFAB_TMP/devinfo.add" ||
	{ show "$VFAB_TMP/devinfo.add"; fail "ibv_devinfo -v does not list GID 5 = ::ffff:198.19.5.1, RoCE v2"; }
wait_events 1 || { show "$VFAB_TMP/asyncwatch.log"; fail "ibv_asyncwatch saw no IBV_EVENT_GID_CHANGE within 1 s of ip addr add"; }
note "gids/4,5 = ::ffff:198.19.5.1 (RoCE v1, v2) on eth0; ibv_asyncwatch saw GID_CHANGE"

note "(a) node1: ip addr add 198.19.5.2/24; ibv_rc_pingpong -g 5 node0 -> node1 (198.19.5.2)"
vx node1 ip addr add 198.19.5.2/24 dev eth0 || fail "ip addr add in node1"
entry node1 5 "$NEW1" "RoCE v2" eth0
start_server node1 "$VFAB_TMP/pp.srv" ibv_rc_pingpong -d mlx5_0 -g 5 -p 18581
wait_listen node1 18581 30 || { show "$VFAB_TMP/pp.srv"; fail "pingpong server did not listen"; }
rc=0
timeout 60 "$VFAB" --fabric "$F" exec node0 -- ibv_rc_pingpong -d mlx5_0 -g 5 -p 18581 198.19.5.2 \
	>"$VFAB_TMP/pp.cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$VFAB_TMP/pp.srv" "$VFAB_TMP/pp.cli"; fail "pingpong -g 5: client $rc, server $src"; }
grep -q 'local address: .*GID ::ffff:198.19.5.1$' "$VFAB_TMP/pp.cli" &&
	grep -q 'remote address: .*GID ::ffff:198.19.5.2$' "$VFAB_TMP/pp.cli" ||
	{ show "$VFAB_TMP/pp.cli"; fail "pingpong -g 5 did not use the new GIDs"; }
grep -Eq '^[0-9]+ iters in ' "$VFAB_TMP/pp.cli" || { show "$VFAB_TMP/pp.cli"; fail "pingpong -g 5: no result line"; }

note "(a) ip addr del in both nodes: the entries become empty again"
before=$(count_events)
vx node0 ip addr del 198.19.5.1/24 dev eth0 || fail "ip addr del in node0"
vx node1 ip addr del 198.19.5.2/24 dev eth0 || fail "ip addr del in node1"
for i in 4 5; do
	entry node0 "$i" "$EMPTY" "IB/RoCE v1" ""
	entry node1 "$i" "$EMPTY" "IB/RoCE v1" ""
done
vx node0 ibv_devinfo -v -d mlx5_0 >"$VFAB_TMP/devinfo.del" 2>&1 || { show "$VFAB_TMP/devinfo.del"; fail "ibv_devinfo"; }
! grep -q '198\.19\.5\.1' "$VFAB_TMP/devinfo.del" || { show "$VFAB_TMP/devinfo.del"; fail "ibv_devinfo still lists ::ffff:198.19.5.1"; }
wait_events $((before + 1)) || { show "$VFAB_TMP/asyncwatch.log"; fail "no IBV_EVENT_GID_CHANGE after ip addr del"; }
kill_tree "$watch_pid"
note "removed: gids/4,5 empty in both nodes, GID_CHANGE seen again"

# The kernel's order: pairs in the order the addresses were added (not IPv4
# first), a removed address leaves its pair empty, the next one takes the
# lowest empty pair and nothing else moves.
V6=fd00:0099:0000:0000:0000:0000:0000:0001
V4A=0000:0000:0000:0000:0000:ffff:c613:0701 # ::ffff:198.19.7.1
V4B=0000:0000:0000:0000:0000:ffff:c613:0801 # ::ffff:198.19.8.1
note "(a) order and holes: fd00:99::1/64 then 198.19.7.1/24; del fd00:99::1; add 198.19.8.1/24"
vx node0 sh -c 'ip addr add fd00:99::1/64 dev eth0 && ip addr add 198.19.7.1/24 dev eth0' ||
	fail "ip addr add (two addresses) in node0"
entry node0 4 "$V6" "IB/RoCE v1" eth0
entry node0 5 "$V6" "RoCE v2" eth0
entry node0 6 "$V4A" "IB/RoCE v1" eth0
entry node0 7 "$V4A" "RoCE v2" eth0
vx node0 ip addr del fd00:99::1/64 dev eth0 || fail "ip addr del fd00:99::1 in node0"
entry node0 4 "$EMPTY" "IB/RoCE v1" ""
entry node0 5 "$EMPTY" "IB/RoCE v1" ""
[ "$(view "$F" node0 mlx5_0 gids/7)" = "$V4A" ] || fail "node0: 198.19.7.1 moved when fd00:99::1 went"
vx node0 ip addr add 198.19.8.1/24 dev eth0 || fail "ip addr add 198.19.8.1 in node0"
entry node0 4 "$V4B" "IB/RoCE v1" eth0
entry node0 5 "$V4B" "RoCE v2" eth0
[ "$(view "$F" node0 mlx5_0 gids/7)" = "$V4A" ] && [ "$(view "$F" node0 mlx5_0 gids/8)" = "$EMPTY" ] ||
	fail "node0: 198.19.8.1 did not take the empty pair 4/5 alone"
vx node0 sh -c 'ip addr del 198.19.7.1/24 dev eth0 && ip addr del 198.19.8.1/24 dev eth0' ||
	fail "ip addr del in node0"
for i in 4 5 6 7; do
	entry node0 "$i" "$EMPTY" "IB/RoCE v1" ""
done
note "pairs follow the order of addition; a hole is reused by the next address, nothing moves"

# --- (c) a wrong GID index -----------------------------------------------------------
# perftest_pair NAME PORT SERVER_X CLIENT_X: ib_write_bw node1 (server) <- node0;
# leaves the client's status in RC and its run time (ms) in MS.
perftest_pair()
{
	local name=$1 port=$2 t0
	start_server node1 "$VFAB_TMP/$name.srv" ib_write_bw -d mlx5_0 -x "$3" -F -n 2000 -p "$port"
	wait_listen node1 "$port" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: server did not listen"; }
	t0=$(date +%s%N)
	RC=0
	timeout 60 "$VFAB" --fabric "$F" exec node0 -- ib_write_bw -d mlx5_0 -x "$4" -F -n 2000 \
		-p "$port" "$NODE1_IP" >"$VFAB_TMP/$name.cli" 2>&1 || RC=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
}

note "(c) ib_write_bw -x 7 (an empty GID entry) against a server on -x 3"
perftest_pair x7-x3 18582 3 7
kill_tree "$SERVER_PID"
[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show "$VFAB_TMP/x7-x3.cli"; fail "-x 7 client exited $RC"; }
[ "$MS" -lt 10000 ] || fail "-x 7 client took $MS ms to fail"
# perftest reads the empty entry as the zero GID (libibverbs' ibv_query_gid
# does so for empty entries on hardware too) and refuses to pair it with the
# server's IPv4-mapped one.
grep -q 'Found Incompatibility issue with GID types' "$VFAB_TMP/x7-x3.cli" ||
	{ show "$VFAB_TMP/x7-x3.cli"; fail "-x 7 failed, but not with perftest's GID type message"; }

note "(c) ib_write_bw -x 7 on both sides"
perftest_pair x7-x7 18583 7 7
kill_tree "$SERVER_PID"
[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show "$VFAB_TMP/x7-x7.cli"; fail "-x 7 client exited $RC"; }
[ "$MS" -lt 10000 ] || fail "-x 7 client took $MS ms to fail"
# Both zero GIDs pass perftest's check; moving the QP to RTR with an empty
# source GID index is refused (EINVAL), as the kernel refuses it.
grep -q 'Failed to modify QP .* to RTR' "$VFAB_TMP/x7-x7.cli" &&
	grep -q "Unable to Connect the HCA's through the link" "$VFAB_TMP/x7-x7.cli" ||
	{ show "$VFAB_TMP/x7-x7.cli"; fail "-x 7 on both sides failed, but not at the QP's RTR transition"; }

note "(c) ib_write_bw -x 3 works"
perftest_pair x3 18584 3 3
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$RC" = 0 ] && [ "$src" = 0 ] || { show "$VFAB_TMP/x3.srv" "$VFAB_TMP/x3.cli"; fail "-x 3: client $RC, server $src"; }
bw=$(perftest_value "$VFAB_TMP/x3.cli" 'BW average[MB/sec]' 4)
num_between "${bw:-x}" 0 inf || { show "$VFAB_TMP/x3.cli"; fail "-x 3: no bandwidth figure"; }
note "-x 7 fails ($(grep -h -o 'Found Incompatibility issue with GID types\|Failed to modify QP [0-9]* to RTR' "$VFAB_TMP"/x7-x*.cli | tr '\n' ';')), -x 3 runs at $bw MB/sec"

# --- (d) PSNs and QPNs ---------------------------------------------------------------
note "(d) psn_check in node0"
rc=0
timeout 120 "$VFAB" --fabric "$F" exec node0 -- "$VFAB_BIN/psn_check" -d mlx5_0 -g 3 \
	>"$VFAB_TMP/psn.log" 2>&1 || rc=$?
show "$VFAB_TMP/psn.log"
[ "$rc" = 0 ] || fail "psn_check exited $rc"
! grep -q '^FAIL' "$VFAB_TMP/psn.log" || fail "psn_check reported failures"
[ "$(grep -c '^ok ' "$VFAB_TMP/psn.log")" -ge 32 ] || fail "psn_check ran fewer checks than it has"

V down >/dev/null || fail "vfab down ($F)"
VFAB_FABRIC=$F_SAVE

# --- (b) the RunAI seed's one-liners on runai-roce.yaml ------------------------------
note "(b) vfab up configs/runai-roce.yaml as $FR"
VR up "$VFAB_REPO/configs/runai-roce.yaml" >"$VFAB_TMP/upr.log" 2>&1 || { show "$VFAB_TMP/upr.log"; fail "vfab up runai-roce.yaml failed"; }
VFAB_FABRIC=$FR

# The seed's commands as it prints them (steps 2.1, 2.2, 2.3 and the export
# line of step 3, which the seed's formatting ran together on one line).
step21=$(
	cat <<'SEED'
grep '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/mlx5_bond_0/ports/1/gids/*
SEED
)
step22=$(
	cat <<'SEED'
grep 'RoCE v2' /sys/class/infiniband/mlx5_bond_0/ports/1/gid_attrs/types/* 2>/dev/null
SEED
)
step23=$(
	cat <<'SEED'
grep 'RoCE v2' $(grep '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/mlx5_bond_0/ports/1/gids/* | cut -d ':' -f 1 | sed 's/gids/gid_attrs\/types/') | sed -e 's/.*\/\([0-9]*\):.*/\1/'
SEED
)
step3=$(
	cat <<'SEED'
export NCCL_IB_GID_INDEX=$(grep 'RoCE v2' $(grep '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/mlx5_bond_0/ports/1/gids/* | cut -d ':' -f 1 | sed 's/gids/gid_attrs\/types/') | sed -e 's/.*\/\([0-9]*\):.*/\1/') export NCCL_IB_HCA=mlx5 export NCCL_SOCKET_NTHREADS=4 export NCCL_NSOCKS_PERTHREAD=8
SEED
)

declare -A IDX
n=1
for node in node0 node1; do
	dir=/sys/class/infiniband/mlx5_bond_0/ports/1
	out=$(vx "$node" bash -c "$step21") || fail "$node: step 2.1 found nothing"
	want21="$dir/gids/8:0000:0000:0000:0000:0000:ffff:c612:010$n
$dir/gids/9:0000:0000:0000:0000:0000:ffff:c612:010$n"
	[ "$out" = "$want21" ] || { printf '%s\n' "$out"; fail "$node: step 2.1 printed other lines than gids/8 and gids/9"; }
	out=$(vx "$node" bash -c "$step22") || fail "$node: step 2.2 found nothing"
	[ "$(printf '%s\n' "$out" | sed 's/.*\/\([0-9]*\):.*/\1/' | tr '\n' ' ')" = "1 3 5 7 9 " ] ||
		{ printf '%s\n' "$out"; fail "$node: step 2.2: the RoCE v2 entries are not 1 3 5 7 9"; }
	idx=$(vx "$node" bash -c "$step23") || fail "$node: the one-liner failed"
	env=$(vx "$node" bash -c "$step3"'
echo "$NCCL_IB_GID_INDEX $NCCL_IB_HCA $NCCL_SOCKET_NTHREADS $NCCL_NSOCKS_PERTHREAD"') ||
		fail "$node: the export line failed"
	[ "$env" = "$idx mlx5 4 8" ] || fail "$node: the export line set '$env', the one-liner printed '$idx'"
	[[ $idx =~ ^[0-9]+$ ]] && [ "$idx" != 3 ] || fail "$node: the one-liner printed '$idx' (expected one index, not 3)"
	[ "$(vx "$node" cat "$dir/gids/$idx")" = "0000:0000:0000:0000:0000:ffff:c612:010$n" ] ||
		fail "$node: gids/$idx is not ::ffff:198.18.1.$n"
	[ "$(vx "$node" cat "$dir/gid_attrs/types/$idx")" = "RoCE v2" ] || fail "$node: types/$idx is not RoCE v2"
	[ "$(vx "$node" cat "$dir/gid_attrs/ndevs/$idx")" = bond0 ] || fail "$node: ndevs/$idx is not bond0"
	[ "$(vx "$node" cat "$dir/gids/3")" = "2001:0db8:0018:0001:0000:0000:0000:000$n" ] &&
		[ "$(vx "$node" cat "$dir/gid_attrs/types/3")" = "RoCE v2" ] ||
		fail "$node: gids/3 is not 2001:db8:18:1::$n (RoCE v2)"
	IDX[$node]=$idx
	n=$((n + 1))
done
[ "${IDX[node0]}" = "${IDX[node1]}" ] || fail "the nodes' indices differ: ${IDX[node0]} vs ${IDX[node1]}"
note "the seed's one-liners print ${IDX[node0]} in both nodes: ::ffff:198.18.1.{1,2}, RoCE v2, bond0; NCCL_IB_GID_INDEX=${IDX[node0]}"

# bw_runai NAME PORT X: ib_write_bw -d mlx5_bond_0 -x X node0 -> node1 must work.
bw_runai()
{
	local name=$1 port=$2 x=$3 src=0 rc=0 bw
	start_server node1 "$VFAB_TMP/$name.srv" ib_write_bw -d mlx5_bond_0 -x "$x" -F -n 2000 -p "$port"
	wait_listen node1 "$port" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: server did not listen"; }
	timeout 60 "$VFAB" --fabric "$FR" exec node0 -- ib_write_bw -d mlx5_bond_0 -x "$x" -F -n 2000 \
		-p "$port" 198.18.0.2 >"$VFAB_TMP/$name.cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 30 || src=$?
	[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$VFAB_TMP/$name.srv" "$VFAB_TMP/$name.cli"; fail "$name: client $rc, server $src"; }
	bw=$(perftest_value "$VFAB_TMP/$name.cli" 'BW average[MB/sec]' 4)
	num_between "${bw:-x}" 0 inf || { show "$VFAB_TMP/$name.cli"; fail "$name: no bandwidth figure"; }
	note "$name: ib_write_bw -d mlx5_bond_0 -x $x: $bw MB/sec"
}
bw_runai "runai-x${IDX[node0]}" 18585 "${IDX[node0]}"
grep -q 'GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:01:01' "$VFAB_TMP/runai-x${IDX[node0]}.cli" ||
	fail "-x ${IDX[node0]} did not use ::ffff:198.18.1.1"
# Index 3 is 2001:db8:18:1::1 (RoCE v2): both bond0s sit on one segment in one
# /64, so on hardware RoCE v2 over IPv6 connects as well.
bw_runai runai-x3 18586 3
grep -q 'GID: 32:01:13:184:00:24:00:01:00:00:00:00:00:00:00:01' "$VFAB_TMP/runai-x3.cli" ||
	fail "-x 3 did not use 2001:db8:18:1::1"

VR down >/dev/null || fail "vfab down ($FR)"
for fab in "$F" "$FR"; do
	[ ! -e "/run/vfab/$fab" ] && [ ! -e "/dev/shm/vfab-$fab" ] || fail "fabric $fab left files behind"
	[ -z "$(ip netns list | grep "vfab-$fab-" || true)" ] || fail "fabric $fab left namespaces behind"
done
note "ok"
