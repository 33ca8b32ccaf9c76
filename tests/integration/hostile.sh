#!/usr/bin/env bash
# hostile.sh PORT: an unprivileged user against root processes, on a fabric
# of its own ($VFAB_FABRIC, see hostile.cmake; issue 27).
# Files: no file of the fabric (the region, the shards, the run dir) is
# writable by a user who is neither root nor its owner, but that user's own
# shard (sockets and the sticky fifo/ and cm/ directories apart, as
# /dev/infiniband and /tmp are); the user cannot open the region for writing
# nor rewrite the names vfabd builds paths from. Counters: what the user
# writes into its own shard's counters is summed into node0's view, and
# vfabd writes nothing else.
# RDMA processes: a root client sends to servers run as the user (one way:
# the user's processes cannot reach root's, "Root's own objects"), whose
# slots (its own shard) the user keeps rewriting meanwhile: completion
# channels armed at names it planted in fifo/ (a link to a root-only file,
# a regular file of its own): the root client writes into no file; every
# owner and MR address naming a root bystander: every byte still goes where
# vfabd registered it (the user's server), the bystander's buffer stays as
# it was; every ring pointed outside the pool: root processes may fail, but
# never crash. And the user reaches none of root's own objects at all.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

port=$1
u=vfabhx1
stage='' victim='' scribbler='' bystander=''
region=/dev/shm/vfab-$VFAB_FABRIC
scribble=$VFAB_BIN/region_scribble
hostile_cleanup()
{
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
asu=(setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups)
as()
{
	"${asu[@]}" "$@"
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

# The user's first verbs process: vfabd makes its shard.
vx node0 setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups \
	ibv_devinfo -d mlx5_0 >"$VFAB_TMP/devinfo.log" 2>&1 || {
	show "$VFAB_TMP/devinfo.log"
	fail "ibv_devinfo as $u"
}
shard=$region.users/u$(id -u "$u")
[ -f "$shard" ] || fail "vfabd made no shard $shard for $u"
[ "$(stat -c '%U %a' "$shard")" = "$u 600" ] || fail "$shard: $(stat -c '%U %a' "$shard")"
# No fabric file another user may write: group or other write bits only on
# sockets (vfabd.sock, captures: the HCA's device node's part) and sticky
# directories whose entries their creators own (fifo/, cm/).
open=$(find "$region" "$region.users" "/run/vfab/$VFAB_FABRIC" -xdev \
	\( -type s -o -type l -o \( -type d -perm -1000 \) \) -prune -o -perm /022 -print)
[ -z "$open" ] || fail "fabric files writable by others: $open"
for f in "$region" $(find "$region.users" "/run/vfab/$VFAB_FABRIC" -xdev -type f); do
	[ "$(stat -c %U "$f")" = "$u" ] && continue
	! as test -w "$f" || fail "$u may write $f"
done
! as "$scribble" "$region" names "$stage" 2>"$VFAB_TMP/names.err" ||
	fail "the user rewrote the region's names"
note "no fabric file is $u's to write but $shard; $(cat "$VFAB_TMP/names.err")"
as "$scribble" "$region" count 1000

# node0's own view sums the user's shard's counter (vfabd's counters file system).
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
note "vfabd wrote node0's view only; $victim and $stage untouched"

# Completion FIFOs: names made of numbers, in the locator's run dir.
fifo=/run/vfab/$VFAB_FABRIC/fifo
as ln -s "$victim/secret" "$fifo/77777.4242"
as sh -c "echo mine >'$fifo/77777.4243'"
before_own=$(stat -c '%s %Y' "$fifo/77777.4243")
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log
start_server node1 "$srv" "${asu[@]}" ib_send_bw -d mlx5_0 -x 3 -e -n 20000 -p "$port"
wait_listen node1 "$port" 30 || { show "$srv"; fail "server did not listen on $port"; }
as "$scribble" "$region" arm 77777 4242 4243 4000 >"$VFAB_TMP/armed" &
scribbler=$!
crc=0
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ib_send_bw -d mlx5_0 -x 3 -e -n 20000 -p "$port" "$NODE1_IP" >"$cli" 2>&1 || crc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
wait "$scribbler" || fail "the scribbler failed"
scribbler=''
show "$srv" "$cli"
[ "$crc" = 0 ] && [ "$src" = 0 ] || fail "ib_send_bw -e: root client $crc, $u's server $src"
[ "$(cat "$VFAB_TMP/armed")" -gt 0 ] || fail "the scribbler armed no CQ of its server"
after=$(find "$victim" -printf "%p %s %T@ %C@\n")
[ "$before" = "$after" ] || fail "a root RDMA process wrote through $fifo/77777.4242: $after"
[ "$(cat "$victim/secret")" = untouched ] || fail "$victim/secret was written"
[ "$(stat -c '%s %Y' "$fifo/77777.4243")" = "$before_own" ] ||
	fail "a root RDMA process wrote into the regular file $fifo/77777.4243"
note "ib_send_bw -e, root client, $u's server with $(cat "$VFAB_TMP/armed") forged channel arms: no file written"

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
	start_server node1 "$srv" "${asu[@]}" "$@" -p "$p" 8>&-
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
	[ "$crc" = 0 ] && [ "$src" = 0 ] || { show "$srv" "$cli"; fail "$name: root client $crc, $u's server $src"; }
	[ "$(cat "$VFAB_TMP/$name.steered")" -gt 0 ] || fail "the scribbler rewrote no slot during $name"
	note "$name, root client to $u's server with $(cat "$VFAB_TMP/$name.steered") forged owners and addresses: finished"
}
steer ib_write_bw $((port + 1)) ib_write_bw -d mlx5_0 -x 3 -F -D 2
steer ib_send_bw $((port + 2)) ib_send_bw -d mlx5_0 -x 3 -n 20000
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
start_server node1 "$srv" "${asu[@]}" ib_send_bw -d mlx5_0 -x 3 -n 200000 -p "$p"
wait_listen node1 "$p" 30 || { show "$srv"; fail "rings: the server did not listen on $p"; }
as "$scribble" "$region" rings 3000 >"$VFAB_TMP/rings.moved" &
scribbler=$!
crc=0
timeout 20 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ib_send_bw -d mlx5_0 -x 3 -n 200000 -p "$p" "$NODE1_IP" >"$cli" 2>&1 || crc=$?
src=0
wait_pid "$SERVER_PID" 20 || src=$?
wait "$scribbler" || fail "the scribbler failed"
scribbler=''
show "$srv" "$cli"
[ "$(cat "$VFAB_TMP/rings.moved")" -gt 0 ] || fail "the scribbler moved no ring"
for rc in "$crc" "$src"; do
	[ "$rc" -le 128 ] || [ "$rc" = 124 ] || fail "an ib_send_bw died of signal $((rc - 128))"
done
kill -0 "$vfabd" || fail "vfabd died"
note "rings moved outside the pool $(cat "$VFAB_TMP/rings.moved") times: client $crc, server $src, no crash"

# --- Root's own objects: out of the user's reach altogether ---
start_server node1 "$VFAB_TMP/root.srv" ibv_rc_pingpong -d mlx5_0 -g 3 -n 20000 -p $((port + 4))
wait_listen node1 $((port + 4)) 30 || { show "$VFAB_TMP/root.srv"; fail "root server did not listen"; }
sleep 1 # vfabd reaps what the user's servers left in its shard
as "$scribble" "$region" arm 77777 4242 4243 1000 >"$VFAB_TMP/root.steered" &
scribbler=$!
crc=0
timeout 60 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	ibv_rc_pingpong -d mlx5_0 -g 3 -n 20000 -p $((port + 4)) "$NODE1_IP" >"$VFAB_TMP/root.cli" 2>&1 || crc=$?
wait "$scribbler" || fail "the scribbler failed"
scribbler=''
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$crc" = 0 ] && [ "$src" = 0 ] || { show "$VFAB_TMP/root.srv" "$VFAB_TMP/root.cli"; fail "root ibv_rc_pingpong: $crc, $src"; }
[ "$(cat "$VFAB_TMP/root.steered")" = 0 ] ||
	fail "the user armed $(cat "$VFAB_TMP/root.steered") CQs of root's processes"
note "root ibv_rc_pingpong between root processes: none of their slots within $u's reach"
