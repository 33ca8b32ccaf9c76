#!/usr/bin/env bash
# `vfab addr` on a fabric of its own ($VFAB_FABRIC, the default config):
#  - the listing matches the node's addresses, with and without the new ones;
#  - `add` of an IPv4 and an IPv6 address prints GID indices at which the
#    node's sysfs view already shows the address (RoCE v1 and v2), and
#    ibv_asyncwatch, started before, sees IBV_EVENT_GID_CHANGE;
#  - ib_write_bw -x <the printed v2 index> runs node0 -> node1 over a second
#    address given to both nodes;
#  - `del` empties those entries and raises GID_CHANGE again;
#  - mistakes fail with their message and exit code (add twice, del of an
#    absent address, unknown node and netdev, bad prefix, garbage, fabric
#    not up);
#  - the host's own addresses are the same before and after.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }

addr_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap addr_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	V down || fail "could not take down the stale fabric $F"
fi

# The host's addresses (netdev and address only: lifetimes count down).
host_addrs() { ip -o addr | awk '{print $2, $3, $4}'; }
host_addrs >"$VFAB_TMP/host.before"

# view NODE FILE: a file of node's mlx5_0 port 1 view, from the host side.
view() { cat "/run/vfab/$F/nodes/$1/class/infiniband/mlx5_0/ports/1/$2"; }

EMPTY=0000:0000:0000:0000:0000:0000:0000:0000
GID4=0000:0000:0000:0000:0000:ffff:c612:004d # ::ffff:198.18.0.77
GID6=2001:0db8:0077:0000:0000:0000:0000:0001 # 2001:db8:77::1

# expect_fail WANT_RC TEXT ARGS...: `vfab ARGS` exits WANT_RC saying TEXT.
expect_fail()
{
	local want=$1 text=$2 rc=0
	shift 2
	V "$@" >"$VFAB_TMP/err.out" 2>"$VFAB_TMP/err.log" || rc=$?
	[ "$rc" = "$want" ] || { show "$VFAB_TMP/err.out" "$VFAB_TMP/err.log"; fail "vfab $* exited $rc, expected $want"; }
	grep -qF -- "$text" "$VFAB_TMP/err.log" || { show "$VFAB_TMP/err.log"; fail "vfab $*: no '$text' in the message"; }
	note "vfab $*: exit $rc, $(head -1 "$VFAB_TMP/err.log")"
}

# add NODE ADDR: `vfab addr NODE add ADDR`; leaves the printed indices in I1, I2.
add()
{
	local out
	out=$(V addr "$1" add "$2") || fail "vfab addr $1 add $2 failed"
	echo "$out"
	[[ $out =~ ^$1\ eth0:\ added\ $2\ \(mlx5_0\ port\ 1:\ GID\ index\ ([0-9]+)\ RoCE\ v1,\ ([0-9]+)\ RoCE\ v2\)$ ]] ||
		fail "vfab addr $1 add $2 printed '$out'"
	I1=${BASH_REMATCH[1]} I2=${BASH_REMATCH[2]}
}

# shows NODE IDX GID TYPE NDEV: the view has this entry at IDX right now.
shows()
{
	[ "$(view "$1" "gids/$2")" = "$3" ] || fail "$1: gids/$2 is '$(view "$1" "gids/$2")', expected $3"
	[ "$(view "$1" "gid_attrs/types/$2")" = "$4" ] ||
		fail "$1: gid_attrs/types/$2 is '$(view "$1" "gid_attrs/types/$2")', expected $4"
	[ "$(view "$1" "gid_attrs/ndevs/$2")" = "$5" ] ||
		fail "$1: gid_attrs/ndevs/$2 is '$(view "$1" "gid_attrs/ndevs/$2")', expected '$5'"
}

count_events()
{
	grep -c 'event_type IBV_EVENT_GID_CHANGE (18), port 1' "$VFAB_TMP/asyncwatch.log" || true
}

wait_events()
{
	for _ in $(seq 100); do
		[ "$(count_events)" -ge "$1" ] && return 0
		sleep 0.02
	done
	return 1
}

note "vfab up (default config) as $F"
V up >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

V addr node0 >"$VFAB_TMP/list0" || fail "vfab addr node0 (listing) failed"
cat "$VFAB_TMP/list0"
grep -Eq '^eth0 +UP +198\.18\.0\.1/24 .*fe80::' "$VFAB_TMP/list0" || fail "the listing lacks eth0 UP 198.18.0.1/24"
grep -Eq '^lo +UNKNOWN +127\.0\.0\.1/8' "$VFAB_TMP/list0" || fail "the listing lacks lo"
# The same netdevs, states and addresses as `ip -br addr` in the node ("eth0@if3" there).
diff <(vx node0 ip -br addr | sed 's/@[^ ]*//' | awk '{$1=$1; print}') \
	<(awk '{$1=$1; print}' "$VFAB_TMP/list0") || fail "the listing differs from ip -br addr in node0"
grep -q '198\.18\.0\.77' "$VFAB_TMP/list0" && fail "198.18.0.77 is there before the test"

start_asyncwatch node0 "$VFAB_TMP/asyncwatch.log"
watch_pid=$SERVER_PID

note "vfab addr node0 add 198.18.0.77/24"
add node0 198.18.0.77/24
V4_1=$I1 V4_2=$I2
# vfab returned: no waiting from here on.
shows node0 "$V4_1" "$GID4" "IB/RoCE v1" eth0
shows node0 "$V4_2" "$GID4" "RoCE v2" eth0
[ "$(vx node0 cat "/sys/class/infiniband/mlx5_0/ports/1/gids/$V4_2")" = "$GID4" ] ||
	fail "node0: /sys/class/infiniband/mlx5_0/ports/1/gids/$V4_2 inside the node differs"
wait_events 1 || { show "$VFAB_TMP/asyncwatch.log"; fail "ibv_asyncwatch saw no IBV_EVENT_GID_CHANGE after the add"; }
note "gids/$V4_1,$V4_2 = ::ffff:198.18.0.77 (RoCE v1, v2); GID_CHANGE seen"

note "vfab addr node0 add 2001:db8:77::1/64"
add node0 2001:db8:77::1/64
V6_1=$I1 V6_2=$I2
shows node0 "$V6_1" "$GID6" "IB/RoCE v1" eth0
shows node0 "$V6_2" "$GID6" "RoCE v2" eth0
vx node0 ibv_devinfo -v -d mlx5_0 >"$VFAB_TMP/devinfo" 2>&1 || { show "$VFAB_TMP/devinfo"; fail "ibv_devinfo"; }
grep -Eq "GID\\[ *$V6_2\\]:[[:space:]]+2001:db8:77::1, RoCE v2\$" "$VFAB_TMP/devinfo" ||
	{ show "$VFAB_TMP/devinfo"; fail "ibv_devinfo -v does not list GID $V6_2 = 2001:db8:77::1, RoCE v2"; }
wait_events 2 || { show "$VFAB_TMP/asyncwatch.log"; fail "no second IBV_EVENT_GID_CHANGE"; }
# Not tentative: added without DAD, like the node's configured IPv6 addresses.
vx node0 ip -6 addr show dev eth0 | grep -A1 '2001:db8:77::1/64' | grep -q tentative &&
	fail "2001:db8:77::1 is tentative (added with DAD)"

V addr node0 >"$VFAB_TMP/list1" || fail "vfab addr node0 (listing) failed"
grep -Eq '^eth0 +UP .*198\.18\.0\.77/24' "$VFAB_TMP/list1" &&
	grep -Eq '^eth0 +UP .*2001:db8:77::1/64' "$VFAB_TMP/list1" ||
	{ show "$VFAB_TMP/list1"; fail "the listing lacks the new addresses"; }

note "traffic over the new GID: node1 gets 198.18.0.78/24; ib_write_bw -x node0 -> node1"
add node1 198.18.0.78/24
N1_2=$I2
start_server node1 "$VFAB_TMP/bw.srv" ib_write_bw -d mlx5_0 -x "$N1_2" -F -n 2000 -p 18591
wait_listen node1 18591 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server did not listen"; }
rc=0
timeout 60 "$VFAB" --fabric "$F" exec node0 -- ib_write_bw -d mlx5_0 -x "$V4_2" -F -n 2000 -p 18591 \
	198.18.0.78 >"$VFAB_TMP/bw.cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$VFAB_TMP/bw.srv" "$VFAB_TMP/bw.cli"; fail "ib_write_bw: client $rc, server $src"; }
# perftest prints each side's GID on the line after its address.
grep -A1 'local address:' "$VFAB_TMP/bw.cli" | grep -q 'GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:77' &&
	grep -A1 'remote address:' "$VFAB_TMP/bw.cli" | grep -q 'GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:78' ||
	{ show "$VFAB_TMP/bw.cli"; fail "ib_write_bw did not use the new GIDs"; }
bw=$(perftest_value "$VFAB_TMP/bw.cli" 'BW average[MB/sec]' 4)
num_between "${bw:-x}" 0 inf || { show "$VFAB_TMP/bw.cli"; fail "ib_write_bw: no bandwidth figure"; }
note "ib_write_bw -x $V4_2 (node0) -> -x $N1_2 (node1): $bw MB/sec"

note "mistakes"
expect_fail 1 "node0 eth0 already has 198.18.0.77/24" addr node0 add 198.18.0.77/24
expect_fail 1 "node0 eth0 has no address 198.18.0.99/24" addr node0 del 198.18.0.99/24
expect_fail 2 "has no node 'node9'" addr node9 add 198.18.0.79/24
expect_fail 2 "node0 has no netdev 'eth9'" addr node0 add 198.18.0.79/24 dev eth9
expect_fail 2 "'1.2.3.4/33' is not ADDR/PREFIX" addr node0 add 1.2.3.4/33
expect_fail 2 "'garbage' is not ADDR/PREFIX" addr node0 add garbage
expect_fail 2 "neither add nor del" addr node0 put 198.18.0.79/24

note "vfab addr node0 del both; node1 del 198.18.0.78/24"
before=$(count_events)
out=$(V addr node0 del 198.18.0.77/24) || fail "vfab addr node0 del 198.18.0.77/24 failed"
echo "$out"
[ "$out" = "node0 eth0: removed 198.18.0.77/24 (mlx5_0 port 1: GID index $V4_1, $V4_2 now empty)" ] ||
	fail "del printed '$out'"
shows node0 "$V4_1" "$EMPTY" "IB/RoCE v1" ""
shows node0 "$V4_2" "$EMPTY" "IB/RoCE v1" ""
shows node0 "$V6_2" "$GID6" "RoCE v2" eth0 # nothing else moved
V addr node0 del 2001:db8:77::1/64 || fail "vfab addr node0 del 2001:db8:77::1/64 failed"
shows node0 "$V6_1" "$EMPTY" "IB/RoCE v1" ""
shows node0 "$V6_2" "$EMPTY" "IB/RoCE v1" ""
V addr node1 del 198.18.0.78/24 || fail "vfab addr node1 del 198.18.0.78/24 failed"
shows node1 "$N1_2" "$EMPTY" "IB/RoCE v1" ""
wait_events $((before + 2)) || { show "$VFAB_TMP/asyncwatch.log"; fail "no IBV_EVENT_GID_CHANGE after the deletes"; }
kill_tree "$watch_pid"
V addr node0 >"$VFAB_TMP/list2" || fail "vfab addr node0 (listing) failed"
cmp -s "$VFAB_TMP/list0" "$VFAB_TMP/list2" || { show "$VFAB_TMP/list0" "$VFAB_TMP/list2"; fail "the listing is not back to the start"; }
note "entries empty again, GID_CHANGE seen, listing as at the start"

host_addrs >"$VFAB_TMP/host.after"
diff "$VFAB_TMP/host.before" "$VFAB_TMP/host.after" || fail "the host's own addresses changed"
note "the host's addresses are unchanged"

V down >/dev/null || fail "vfab down ($F)"
expect_fail 1 "fabric $F is not up" addr node0 add 198.18.0.77/24
[ ! -e "/run/vfab/$F" ] && [ ! -e "/dev/shm/vfab-$F" ] || fail "fabric $F left files behind"
note "ok"
