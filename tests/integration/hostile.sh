#!/usr/bin/env bash
# hostile.sh PORT: an unprivileged user against root processes, on a fabric
# of its own ($VFAB_FABRIC, see hostile.cmake; issue 27 High #1 and #2).
# vfabd: the user rewrites the region (mode 0666): the run dir, node0's id
# and mlx5_0's name point into a directory the user owns, whose `counters`
# and `hw_counters` are links to a root-only directory, and bumps a counter
# so that vfabd's tick writes. vfabd must write node0's real view and nothing
# else: the root-only directory stays as it was, nothing in the user's
# directory belongs to root; LINK still finds and rewrites the real view.
# RDMA processes: while ibv_rc_pingpong runs as root between the nodes, the
# user keeps pointing the completion channel of every CQ at names it planted
# in the run dir's fifo/ (a link to a root-only file, a regular file of its
# own) and arming it: the root processes write into no file, and finish.
# Object tables (High #3): while root ib_write_bw and ibv_rc_pingpong run,
# the user names a bystander root process the owner of every QP, MR, CQ and
# SRQ and its buffer the address of every MR: every byte still goes where
# vfabd registered it (the bystander's buffer stays as it was, both ends
# finish). Then it points every ring outside the pool: root processes may
# fail, but never crash.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
u=vfabhx1
stage='' victim='' restore='' scribbler='' bystander=''
region=/dev/shm/vfab-$VFAB_FABRIC
scribble=$VFAB_BIN/region_scribble
hostile_cleanup()
{
	[ -z "$restore" ] || "$scribble" "$region" restore $restore || true
	[ -z "$scribbler" ] || kill "$scribbler" 2>/dev/null || true
	[ -z "$bystander" ] || kill "$bystander" 2>/dev/null || true
	"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
	userdel "$u" 2>/dev/null || true
	[ -z "$stage" ] || rm -rf "$stage"
	[ -z "$victim" ] || rm -rf "$victim"
	vfab_cleanup
}
trap hostile_cleanup EXIT
userdel "$u" 2>/dev/null || true
useradd --system --no-create-home --shell /usr/sbin/nologin "$u" ||
	fail "cannot create test user $u"
as()
{
	setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups "$@"
}
as test -x "$scribble" || {
	note "$scribble is out of reach of users other than root; skipped"
	exit 77
}

"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up.log" 2>&1 || {
	show "$VFAB_TMP/up.log"
	fail "vfab up"
}
vfabd=$(cat "/run/vfab/$VFAB_FABRIC/vfabd.pid")

victim=$(mktemp -d /tmp/vfab-victim.XXXXXX)
echo untouched >"$victim/secret"
chmod 600 "$victim/secret"
before=$(find "$victim" -printf "%p %s %T@ %C@\n")
stage=$(mktemp -d /tmp/vfab-stage.XXXXXX)
chown "$u" "$stage"
chmod 755 "$stage"

restore=$(as "$scribble" "$region" names "$stage") || fail "the user cannot write the region"
as mkdir -p "$stage/nodes/x/class/infiniband" "$stage/s/ports/1" "$stage/fifo"
as ln -s "$victim" "$stage/s/ports/1/counters"
as ln -s "$victim" "$stage/s/ports/1/hw_counters"
as "$scribble" "$region" count 1000
note "region rewritten by $u: run dir $stage, HCA name ../../../../../..$stage/s"

# node0's own view shows the counter (vfabd's counters file system; its tick where there is none).
got=''
for _ in $(seq 40); do
	got=$(vx node0 cat /sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data)
	[ "$got" = 1000 ] && break
	sleep 0.1
done
[ "$got" = 1000 ] || fail "node0's port_xmit_data reads '$got', not 1000"
"$VFAB" --fabric "$VFAB_FABRIC" link node0/mlx5_0 down >/dev/null || fail "vfab link down"
[ "$(vx node0 cat /sys/class/infiniband/mlx5_0/ports/1/state)" = "1: DOWN" ] ||
	fail "LINK did not rewrite node0's view"
"$VFAB" --fabric "$VFAB_FABRIC" link node0/mlx5_0 up >/dev/null || fail "vfab link up"
sleep 0.6 # two more ticks

kill -0 "$vfabd" || fail "vfabd died"
after=$(find "$victim" -printf "%p %s %T@ %C@\n")
[ "$before" = "$after" ] || fail "vfabd wrote into $victim: $after"
[ "$(cat "$victim/secret")" = untouched ] || fail "vfabd replaced $victim/secret"
owned=$(find "$stage" -user root)
[ -z "$owned" ] || fail "vfabd created files in the user's directory: $owned"
note "vfabd wrote node0's real view only; $victim and $stage untouched"

# Completion FIFOs: names made of numbers, in the locator's run dir.
fifo=/run/vfab/$VFAB_FABRIC/fifo
as ln -s "$victim/secret" "$fifo/77777.4242"
as sh -c "echo mine >'$fifo/77777.4243'"
before_own=$(stat -c '%s %Y' "$fifo/77777.4243")
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log
start_server node1 "$srv" ibv_rc_pingpong -d mlx5_0 -g 3 -n 20000 -p "$port"
wait_listen node1 "$port" 30 || { show "$srv"; fail "server did not listen on $port"; }
as "$scribble" "$region" arm 77777 4242 4243 4000 >"$VFAB_TMP/armed" &
scribbler=$!
crc=0
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ibv_rc_pingpong -d mlx5_0 -g 3 -n 20000 -p "$port" "$NODE1_IP" >"$cli" 2>&1 || crc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
wait "$scribbler" || fail "the scribbler failed"
scribbler=''
show "$srv" "$cli"
[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "root ibv_rc_pingpong: client $crc, server $src"
[ "$(cat "$VFAB_TMP/armed")" -gt 0 ] || fail "the scribbler armed no CQ"
after=$(find "$victim" -printf "%p %s %T@ %C@\n")
[ "$before" = "$after" ] || fail "a root RDMA process wrote through $fifo/77777.4242: $after"
[ "$(cat "$victim/secret")" = untouched ] || fail "$victim/secret was written"
[ "$(stat -c '%s %Y' "$fifo/77777.4243")" = "$before_own" ] ||
	fail "a root RDMA process wrote into the regular file $fifo/77777.4243"
note "root ibv_rc_pingpong with $(cat "$VFAB_TMP/armed") forged channel arms: no file written"

# --- Object tables: the region's owners and addresses name a bystander ---
bin=$VFAB_TMP/bystander.in
mkfifo "$bin"
python3 "$(dirname "$0")/victim.py" <"$bin" >"$VFAB_TMP/bystander.out" 2>&1 &
bystander=$!
exec 8>"$bin"
for _ in $(seq 100); do [ -s "$VFAB_TMP/bystander.out" ] && break; sleep 0.1; done
read -r bpid baddr <"$VFAB_TMP/bystander.out" || fail "the bystander did not start"
[ "$bpid" = "$bystander" ] || fail "the bystander printed '$bpid $baddr'"
steer()
{
	local name=$1 p=$2
	shift 2
	srv=$VFAB_TMP/$name.srv cli=$VFAB_TMP/$name.cli
	start_server node1 "$srv" "$@" -p "$p" 8>&-
	wait_listen node1 "$p" 30 || { show "$srv"; fail "$name: the server did not listen on $p"; }
	as "$scribble" "$region" steer "$bpid" "$baddr" 6000 >"$VFAB_TMP/$name.steered" 8>&- &
	scribbler=$!
	crc=0
	timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$@" -p "$p" "$NODE1_IP" \
		>"$cli" 2>&1 8>&- || crc=$?
	src=0
	wait_pid "$SERVER_PID" 30 || src=$?
	wait "$scribbler" || fail "the scribbler failed"
	scribbler=''
	[ "$crc" = 0 ] && [ "$src" = 0 ] || { show "$srv" "$cli"; fail "root $name: client $crc, server $src"; }
	[ "$(cat "$VFAB_TMP/$name.steered")" -gt 0 ] || fail "the scribbler rewrote no slot during $name"
	note "root $name with $(cat "$VFAB_TMP/$name.steered") forged owners and addresses: finished"
}
steer ib_write_bw $((port + 1)) ib_write_bw -d mlx5_0 -x 3 -F -D 2
steer ibv_rc_pingpong $((port + 2)) ibv_rc_pingpong -d mlx5_0 -g 3 -n 20000
exec 8>&-
brc=0
wait_pid "$bystander" 30 || brc=$?
bystander=''
cat "$VFAB_TMP/bystander.out"
[ "$brc" = 0 ] || fail "a root RDMA process wrote into the bystander (pid $bpid)"
note "the bystander's 16 MiB are untouched"

# --- Rings outside the pool: root processes fail at worst, never crash ---
srv=$VFAB_TMP/rings.srv cli=$VFAB_TMP/rings.cli
p=$((port + 3))
start_server node1 "$srv" ibv_rc_pingpong -d mlx5_0 -g 3 -n 200000 -p "$p"
wait_listen node1 "$p" 30 || { show "$srv"; fail "rings: the server did not listen on $p"; }
as "$scribble" "$region" rings 3000 >"$VFAB_TMP/rings.moved" &
scribbler=$!
crc=0
timeout 20 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ibv_rc_pingpong -d mlx5_0 -g 3 -n 200000 -p "$p" "$NODE1_IP" >"$cli" 2>&1 || crc=$?
src=0
wait_pid "$SERVER_PID" 20 || src=$?
wait "$scribbler" || fail "the scribbler failed"
scribbler=''
show "$srv" "$cli"
[ "$(cat "$VFAB_TMP/rings.moved")" -gt 0 ] || fail "the scribbler moved no ring"
for rc in "$crc" "$src"; do
	[ "$rc" -le 128 ] || [ "$rc" = 124 ] || fail "a root ibv_rc_pingpong died of signal $((rc - 128))"
done
kill -0 "$vfabd" || fail "vfabd died"
note "rings moved outside the pool $(cat "$VFAB_TMP/rings.moved") times: client $crc, server $src, no crash"
