#!/usr/bin/env bash
# rootless.sh PORT: a fabric without root (netns/userns.h). A test user
# (created here, removed on any exit) brings up a fabric of the same name as
# the root fabric the suite runs on; between its nodes: ibv_devinfo,
# ib_write_bw and ib_write_lat, rping, UCX's ucx_perftest, then `vfab shape`
# and the shaped rate; a second user's fabric of the same name beside it
# (its own run dir, unshaped); a fabric with sshd in its nodes (`up --ssh`),
# the user's logins and RDMA between them. Meanwhile the host and root's
# fabric see nothing of it; `vfab down` leaves no process, mount,
# namespace, shared memory or file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
ROOT_VFAB=$VFAB
who=$(echo "$VFAB_FABRIC" | tr 'A-Z_' 'a-z-' | cut -c1-24)
# The user of the moment (RL_*) and, while a second one exists, the first (U1_*).
end_users()
{
	VFAB=$ROOT_VFAB
	rootless_end "$VFAB_FABRIC" "${VFAB_FABRIC}2"
	if [ -n "${U1_UID:-}" ]; then
		RL_USER=$U1_USER RL_UID=$U1_UID RL_VFAB=$U1_VFAB
		rootless_end "$VFAB_FABRIC" "${VFAB_FABRIC}2"
	fi
	vfab_cleanup
}
trap end_users EXIT
rootless_begin "vf-$who-rl" || exit 77
uid=$RL_UID user=$RL_USER
# From here on the lib's helpers (vx, start_server, wait_listen) run vfab as the user.
VFAB=$RL_VFAB

netns_before=$(ls /run/netns 2>/dev/null | sort)
# A shard a user of this uid had in root's fabric before (a deleted test user's) is not the fabric's.
shm_before=$(find /dev/shm /dev/infiniband -user "$uid" 2>/dev/null | sort)
links_before=$(ip -o link | awk -F': ' '{print $2}' | sort)
mounts_before=$(findmnt -rn -o TARGET | sort)

note "up as $user (uid $uid), fabric $VFAB_FABRIC beside root's of the same name"
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up.txt" 2>&1 || { show "$VFAB_TMP/up.txt"; fail "rootless up failed"; }
cat "$VFAB_TMP/up.txt"
grep -q "run dir /tmp/vfab-$uid/$VFAB_FABRIC\|run dir /run/user/$uid/vfab/$VFAB_FABRIC" \
	"$VFAB_TMP/up.txt" || fail "the run dir is not the user's"
grep -q "without root: a user namespace of uid $uid" "$VFAB_TMP/up.txt" ||
	fail "up does not say it runs without root"
VFAB_RUN_DIR=$(sed -n 's/.*, run dir \(.*\)$/\1/p' "$VFAB_TMP/up.txt")

note "the host and root's fabric see nothing of it"
[ "$(ls /run/netns 2>/dev/null | sort)" = "$netns_before" ] || fail "a namespace was published on the host"
[ "$(ip -o link | awk -F': ' '{print $2}' | sort)" = "$links_before" ] || fail "the host's links changed"
[ "$(findmnt -rn -o TARGET | sort)" = "$mounts_before" ] ||
	fail "the host's mounts changed: $(diff <(echo "$mounts_before") <(findmnt -rn -o TARGET | sort))"
[ "$(find /dev/shm /dev/infiniband -user "$uid" 2>/dev/null | sort)" = "$shm_before" ] ||
	fail "files of $user in the host's /dev"
"$ROOT_VFAB" --fabric "$VFAB_FABRIC" status >"$VFAB_TMP/root-status.txt" 2>&1 ||
	{ show "$VFAB_TMP/root-status.txt"; fail "root's fabric is no longer up"; }
grep -q "run dir /run/vfab/$VFAB_FABRIC" "$VFAB_TMP/root-status.txt" ||
	{ show "$VFAB_TMP/root-status.txt"; fail "root sees another fabric"; }
"$VFAB" --fabric "$VFAB_FABRIC" status >"$VFAB_TMP/status.txt" 2>&1 ||
	{ show "$VFAB_TMP/status.txt"; fail "rootless status failed"; }
grep -q "run dir /tmp/vfab-$uid\|run dir /run/user/$uid" "$VFAB_TMP/status.txt" ||
	{ show "$VFAB_TMP/status.txt"; fail "the user sees root's fabric"; }

note "ibv_devinfo"
vx node0 ibv_devinfo -d mlx5_0 >"$VFAB_TMP/devinfo.txt" 2>&1 || { show "$VFAB_TMP/devinfo.txt"; fail "ibv_devinfo failed"; }
grep -q "PORT_ACTIVE" "$VFAB_TMP/devinfo.txt" || { show "$VFAB_TMP/devinfo.txt"; fail "no active port"; }

# perf NAME CLIENT_ARGS...: a perftest pair, server in node1, client in node0.
perf()
{
	local name=$1
	shift
	start_server node1 "$VFAB_TMP/$name.srv" "$@" -p "$port"
	wait_listen node1 "$port" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: no server"; }
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$@" -p "$port" "$NODE1_IP" \
		>"$VFAB_TMP/$name.cli" 2>&1 || { show "$VFAB_TMP/$name.srv" "$VFAB_TMP/$name.cli"; fail "$name failed"; }
	wait_pid "$SERVER_PID" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: server failed"; }
	port=$((port + 1))
}

note "ib_write_bw 1 MiB, ib_write_lat 8 B"
perf bw ib_write_bw -s 1048576 -n 2000
bw=$(perftest_value "$VFAB_TMP/bw.cli" "BW average" 4)
num_between "$bw" 100 inf || { show "$VFAB_TMP/bw.cli"; fail "ib_write_bw: $bw MB/s"; }
perf lat ib_write_lat -s 8 -n 5000
lat=$(perftest_value "$VFAB_TMP/lat.cli" "t_typical" 5)
num_between "$lat" 0 100 || { show "$VFAB_TMP/lat.cli"; fail "ib_write_lat: $lat us"; }
note "rootless ib_write_bw $bw MB/s, ib_write_lat $lat us"

note "rping (RDMA CM), 10 verified pings"
start_server node1 "$VFAB_TMP/rping.srv" rping -s -a "$NODE1_IP" -p "$port" -C 10
wait_cm_listen "$port" || { show "$VFAB_TMP/rping.srv"; fail "rping: no listener"; }
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- rping -c -a "$NODE1_IP" -p "$port" -C 10 -V -v \
	>"$VFAB_TMP/rping.cli" 2>&1 || { show "$VFAB_TMP/rping.srv" "$VFAB_TMP/rping.cli"; fail "rping failed"; }
[ "$(grep -c '^ping data' "$VFAB_TMP/rping.cli")" = 10 ] || { show "$VFAB_TMP/rping.cli"; fail "rping: not 10 pings"; }
wait_pid "$SERVER_PID" 30 || true
port=$((port + 1))

note "ucx_perftest tag_lat over rc_verbs"
ucx=(env UCX_NET_DEVICES=mlx5_0:1 UCX_TLS=rc_verbs,ud_verbs)
start_server node1 "$VFAB_TMP/ucx.srv" "${ucx[@]}" ucx_perftest -p "$port"
wait_listen node1 "$port" 30 || { show "$VFAB_TMP/ucx.srv"; fail "ucx_perftest: no server"; }
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "${ucx[@]}" ucx_perftest -p "$port" \
	-t tag_lat -n 10000 "$NODE1_IP" >"$VFAB_TMP/ucx.cli" 2>&1 || { show "$VFAB_TMP/ucx.cli"; fail "ucx_perftest failed"; }
grep -q '^Final:' "$VFAB_TMP/ucx.cli" || { show "$VFAB_TMP/ucx.cli"; fail "ucx_perftest: no result"; }
wait_pid "$SERVER_PID" 30 || true
port=$((port + 1))

note "vfab shape node0/mlx5_0 bw=5, then the rate"
"$VFAB" --fabric "$VFAB_FABRIC" shape node0/mlx5_0 bw=5 >"$VFAB_TMP/shape.txt" 2>&1 ||
	{ show "$VFAB_TMP/shape.txt"; fail "vfab shape failed"; }
# An iteration count, not -D: perftest's -D clock is unreliable on one-CPU nodes.
perf shaped ib_write_bw -s 1048576 -n 600
sbw=$(perftest_value "$VFAB_TMP/shaped.cli" "BW average" 4)
# 5 Gb/s = 596 MiB/s, perftest's MB.
num_between "$sbw" 536 626 || { show "$VFAB_TMP/shaped.cli"; fail "shaped to 5 Gb/s: $sbw MB/s"; }
note "shaped: $sbw MB/s of 596"
"$VFAB" --fabric "$VFAB_FABRIC" shape node0/mlx5_0 lat=20 >"$VFAB_TMP/shape-lat.txt" 2>&1 ||
	{ show "$VFAB_TMP/shape-lat.txt"; fail "vfab shape lat failed"; }
cat "$VFAB_TMP/shape-lat.txt"

note "a second user's fabric of the same name, beside the first's: its own, unshaped"
U1_USER=$RL_USER U1_UID=$RL_UID U1_VFAB=$RL_VFAB U1_RUN_DIR=$VFAB_RUN_DIR
rootless_begin "vf-$who-rl2" || fail "a second test user cannot run vfab"
VFAB=$RL_VFAB
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up2.txt" 2>&1 || { show "$VFAB_TMP/up2.txt"; fail "second user's up"; }
grep -q "run dir /tmp/vfab-$RL_UID/$VFAB_FABRIC" "$VFAB_TMP/up2.txt" || { show "$VFAB_TMP/up2.txt"; fail "second run dir"; }
! setpriv --reuid="$RL_UID" --regid="$RL_GID" --clear-groups ls "$U1_RUN_DIR" >/dev/null 2>&1 ||
	fail "the second user reads the first user's run dir"
perf other ib_write_bw -s 1048576 -n 1000
obw=$(perftest_value "$VFAB_TMP/other.cli" "BW average" 4)
num_between "$obw" 1000 inf || { show "$VFAB_TMP/other.cli"; fail "the second fabric is shaped too: $obw MB/s"; }
"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || fail "second user's down"
rootless_end
RL_USER=$U1_USER RL_UID=$U1_UID RL_VFAB=$U1_VFAB VFAB=$U1_VFAB U1_UID=
note "second user: $obw MB/s unshaped; the first's link stays at 5 Gb/s"
perf shaped2 ib_write_bw -s 1048576 -n 600
sbw=$(perftest_value "$VFAB_TMP/shaped2.cli" "BW average" 4)
num_between "$sbw" 536 626 || { show "$VFAB_TMP/shaped2.cli"; fail "the first fabric lost its shape: $sbw MB/s"; }

note "up --ssh: sshd in every node lets the user in; RDMA between logins"
"$VFAB" --fabric "${VFAB_FABRIC}2" up --ssh >"$VFAB_TMP/ssh-up.txt" 2>&1 ||
	{ show "$VFAB_TMP/ssh-up.txt"; fail "up --ssh failed"; }
who_in=$("$VFAB" --fabric "${VFAB_FABRIC}2" ssh node1 id -un 2>"$VFAB_TMP/ssh-id.err") ||
	{ show "$VFAB_TMP/ssh-id.err"; fail "vfab ssh node1 failed"; }
[ "$who_in" = "$user" ] || fail "ssh logged in as '$who_in', not $user"
# (No home directory: sshd says so on stderr.)
timeout 30 "$VFAB" --fabric "${VFAB_FABRIC}2" exec node0 -- ssh node1 hostname >"$VFAB_TMP/ssh-host.txt" \
	2>"$VFAB_TMP/ssh-host.err" && [ "$(cat "$VFAB_TMP/ssh-host.txt")" = node1 ] ||
	{ show "$VFAB_TMP/ssh-host.txt" "$VFAB_TMP/ssh-host.err"; fail "ssh node1 from node0"; }
timeout 60 "$VFAB" --fabric "${VFAB_FABRIC}2" ssh node1 ib_write_bw -s 65536 -n 1000 -p "$port" \
	>"$VFAB_TMP/sshbw.srv" 2>&1 &
SERVER_PID=$!
VFAB_SERVER_PIDS+=("$SERVER_PID")
sleep 1
timeout 60 "$VFAB" --fabric "${VFAB_FABRIC}2" ssh node0 ib_write_bw -s 65536 -n 1000 -p "$port" "$NODE1_IP" \
	>"$VFAB_TMP/sshbw.cli" 2>&1 || { show "$VFAB_TMP/sshbw.srv" "$VFAB_TMP/sshbw.cli"; fail "ib_write_bw over ssh"; }
wait_pid "$SERVER_PID" 30 || { show "$VFAB_TMP/sshbw.srv"; fail "ib_write_bw server over ssh"; }
port=$((port + 1))
"$VFAB" --fabric "${VFAB_FABRIC}2" down >/dev/null 2>&1 || fail "down of the ssh fabric"

note "down leaves nothing"
"$VFAB" --fabric "$VFAB_FABRIC" down >"$VFAB_TMP/down.txt" 2>&1 || { show "$VFAB_TMP/down.txt"; fail "rootless down failed"; }
for _ in $(seq 50); do
	left=$(LD_PRELOAD='' command ps -o pid=,stat= -u "$uid" | awk '$2 !~ /^Z/' || true)
	[ -z "$left" ] && break
	sleep 0.1
done
[ -z "$left" ] || fail "processes of $user left: $left"
[ ! -e "/tmp/vfab-$uid" ] || fail "/tmp/vfab-$uid left: $(ls -la "/tmp/vfab-$uid")"
[ "$(ls /run/netns 2>/dev/null | sort)" = "$netns_before" ] || fail "namespaces left on the host"
[ "$(ip -o link | awk -F': ' '{print $2}' | sort)" = "$links_before" ] || fail "links left on the host"
[ "$(findmnt -rn -o TARGET | sort)" = "$mounts_before" ] ||
	fail "mounts left on the host: $(diff <(echo "$mounts_before") <(findmnt -rn -o TARGET | sort))"
"$ROOT_VFAB" --fabric "$VFAB_FABRIC" status >/dev/null 2>&1 || fail "root's fabric went down with the user's"
note "rootless fabric: up, traffic, shaping, down: all as $user"
