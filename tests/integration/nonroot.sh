#!/usr/bin/env bash
# nonroot.sh PORT: RDMA as an unprivileged user (issue 10, finding 9).
# Two test users are created (and removed on any exit); as the first one,
# ibv_rc_pingpong and ib_write_bw run between node1 and node0, and over the
# RDMA CM (issue 28) rping and ib_write_bw -R, while a listen on port 80 is
# refused as the kernel refuses it (EACCES without CAP_NET_BIND_SERVICE);
# then a server of the first user and a client of the second must fail,
# with vfab's message saying why (copies need the same user); datagrams of
# the second user to a UD QP of the first take none of its receives.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
# Named after the fabric: runs on other fabrics (other trees) create and
# remove users of their own, never these.
who=$(echo "$VFAB_FABRIC" | tr 'A-Z_' 'a-z-' | cut -c1-24)
u1=vf-$who-1 u2=vf-$who-2
cleanup_users()
{
	userdel "$u1" 2>/dev/null || true
	userdel "$u2" 2>/dev/null || true
}
trap 'cleanup_users; vfab_cleanup' EXIT
cleanup_users
useradd --system --no-create-home --shell /usr/sbin/nologin "$u1" ||
	fail "cannot create test user $u1"
useradd --system --no-create-home --shell /usr/sbin/nologin "$u2" ||
	fail "cannot create test user $u2"
as()
{
	local user=$1
	shift
	echo setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups "$@"
}

# A build other users cannot reach (a clone under /root, mode 700): the
# nodes' non-root processes cannot load the provider; `vfab up` warns of it.
lib=$(ls "$VFAB_BUILD_DIR"/lib/libvfab-rdmav*.so | head -1)
# shellcheck disable=SC2046
if ! $(as "$u1" test -r "$lib"); then
	note "$lib is out of reach of users other than root; skipped (see vfab up's warning)"
	exit 77
fi

# pair USER_SERVER USER_CLIENT LOGNAME TOOL ARGS...: server in node1, client in node0.
pair()
{
	local us=$1 uc=$2 name=$3
	shift 3
	local srv=$VFAB_TMP/$name.server.log cli=$VFAB_TMP/$name.client.log
	# shellcheck disable=SC2046
	start_server node1 "$srv" $(as "$us" "$@" -p "$port")
	wait_listen node1 "$port" 30 || { show "$srv"; fail "$name: server did not listen"; }
	crc=0
	# shellcheck disable=SC2046
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
		$(as "$uc" "$@" -p "$port" "$NODE1_IP") >"$cli" 2>&1 || crc=$?
	src=0
	wait_pid "$SERVER_PID" "${SERVER_WAIT:-20}" || src=$?
	show "$srv" "$cli"
	port=$((port + 1))
}

pair "$u1" "$u1" pingpong ibv_rc_pingpong -d mlx5_0 -g 3 -n 1000
[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "non-root ibv_rc_pingpong: client $crc, server $src"
grep -qE '^[0-9]+ iters in' "$VFAB_TMP/pingpong.client.log" || fail "pingpong printed no result"
note "ibv_rc_pingpong as $u1 between the nodes"

pair "$u1" "$u1" writebw ib_write_bw -d mlx5_0 -x 3 -F -n 2000
[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "non-root ib_write_bw: client $crc, server $src"
bw=$(perftest_value "$VFAB_TMP/writebw.client.log" "BW average" 4)
num_between "${bw:-x}" 0 inf || fail "ib_write_bw as $u1 printed no bandwidth"
note "ib_write_bw as $u1: $bw MB/s"

# The RDMA CM: any user listens on ports >= 1024 (the run dir's cm/ is 01777).
srv=$VFAB_TMP/rping.server.log cli=$VFAB_TMP/rping.client.log
# shellcheck disable=SC2046
start_server node1 "$srv" $(as "$u1" rping -s -a "$NODE1_IP" -p "$port" -C 10 -v)
wait_cm_listen "$port" || { show "$srv"; fail "non-root rping -s did not listen"; }
crc=0
# shellcheck disable=SC2046
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	$(as "$u1" rping -c -a "$NODE1_IP" -p "$port" -C 10 -v) >"$cli" 2>&1 || crc=$?
src=0
wait_pid "$SERVER_PID" 20 || src=$?
show "$srv" "$cli"
[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "non-root rping: client $crc, server $src"
n=$(grep -c '^ping data: rdma-ping-' "$cli" || true)
[ "$n" = 10 ] || fail "non-root rping: $n verified pings, not 10"
note "rping as $u1 between the nodes"
port=$((port + 1))

srv=$VFAB_TMP/writebw_cm.server.log cli=$VFAB_TMP/writebw_cm.client.log
# shellcheck disable=SC2046
start_server node1 "$srv" $(as "$u1" ib_write_bw -d mlx5_0 -R -F -n 2000 -p "$port")
wait_cm_listen "$port" || { show "$srv"; fail "non-root ib_write_bw -R did not listen"; }
crc=0
# shellcheck disable=SC2046
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	$(as "$u1" ib_write_bw -d mlx5_0 -R -F -n 2000 -p "$port" "$NODE1_IP") >"$cli" 2>&1 || crc=$?
src=0
wait_pid "$SERVER_PID" 20 || src=$?
show "$srv" "$cli"
[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "non-root ib_write_bw -R: client $crc, server $src"
bw=$(perftest_value "$cli" "BW average" 4)
num_between "${bw:-x}" 0 inf || fail "ib_write_bw -R as $u1 printed no bandwidth"
note "ib_write_bw -R as $u1: $bw MB/s"
port=$((port + 1))

# Below 1024 only with CAP_NET_BIND_SERVICE, as cma_use_port decides.
log=$VFAB_TMP/port80.log
rc=0
# shellcheck disable=SC2046
timeout 20 "$VFAB" --fabric "$VFAB_FABRIC" exec node1 -- \
	$(as "$u1" rping -s -a "$NODE1_IP" -p 80 -C 1) >"$log" 2>&1 || rc=$?
show "$log"
[ "$rc" != 0 ] || fail "a non-root rping -s listened on port 80"
grep -q 'rdma_bind_addr: Permission denied' "$log" || fail "port 80: no EACCES from rdma_bind_addr"
note "port 80 as $u1: rdma_bind_addr: Permission denied"

SERVER_WAIT=1 pair "$u1" "$u2" cross ibv_rc_pingpong -d mlx5_0 -g 3 -n 10
[ "$crc" != 0 ] || fail "ibv_rc_pingpong between two users succeeded"
grep -q 'vfab: cannot copy into pid .*permission denied' "$VFAB_TMP/cross.client.log" ||
	fail "no clear error for traffic between users"
note "between users: fails with vfab's message"

# Datagrams the kernel refuses (another user's) take none of the receiver's
# receives: the next datagram of its own user lands in the first one.
cp "$(dirname "$0")/refused_ud.py" "$VFAB_TMP/refused_ud.py"
chmod 755 "$VFAB_TMP" "$VFAB_TMP/refused_ud.py"
srv=$VFAB_TMP/refused.victim.log
# shellcheck disable=SC2046
start_server node1 "$srv" $(as "$u1" /usr/bin/python3 "$VFAB_TMP/refused_ud.py" victim "$port")
wait_listen node1 "$port" 30 || { show "$srv"; fail "refused_ud victim did not listen"; }
for who in "$u2 4 intruder" "$u1 1 legit"; do
	set -- $who
	# shellcheck disable=SC2046
	timeout 30 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- $(as "$1" /usr/bin/python3 \
		"$VFAB_TMP/refused_ud.py" sender "$NODE1_IP" "$port" "$2" "$3") >"$VFAB_TMP/refused.$3.log" 2>&1 ||
		{ show "$VFAB_TMP/refused.$3.log"; fail "refused_ud sender $3 failed"; }
done
wait_pid "$SERVER_PID" 30 || { show "$srv"; fail "refused datagrams took receives"; }
show "$srv"
note "4 datagrams of $u2 refused: $u1's next one took its first receive"
port=$((port + 1))
