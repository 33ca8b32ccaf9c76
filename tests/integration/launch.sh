#!/usr/bin/env bash
# Launching across nodes as a cluster would, on a fabric of its own (it needs
# `up --ssh` and `--libdir`): `vfab run` (scheduler variables, prefixed output,
# exit status, signals), the nodes' /etc/hosts, launcher files, a carried
# library found through the node's own ld.so.cache, and sshd in every node
# (plain `ssh node1` inside a node, `vfab ssh` from the host). Exits 77 (skip)
# after the other checks when openssh-server is not installed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# With pipefail, `grep -q` quitting early can fail a pipeline (SIGPIPE upstream):
# the greps below read everything (>/dev/null) instead.

F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }
MARK="vfab-launch-test-$$"

launch_cleanup()
{
	V down >/dev/null 2>&1 || true
	vfab_cleanup
}
trap launch_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	V down || fail "could not take down the stale fabric $F"
fi

ssh_opt=()
have_sshd=0
if [ -x /usr/sbin/sshd ]; then
	have_sshd=1
	ssh_opt=(--ssh)
else
	note "openssh-server is not installed: the ssh checks will be skipped"
fi

# A carried rdma-core: the system's libibverbs copied to a directory of its own.
libs=$VFAB_TMP/libs
mkdir -p "$libs"
# awk reads all of ldconfig's output: quitting at the match would let ldconfig
# die of SIGPIPE once the cache outgrows a pipe, failing this line under pipefail.
sys_lib=$(ldconfig -p | awk '/libibverbs\.so\.1 .*x86-64/ && !f {print $NF; f = 1}')
[ -n "$sys_lib" ] || fail "no libibverbs.so.1 in the host's ld.so cache"
cp -a "$sys_lib" "$(readlink -f "$sys_lib")" "$libs/"

note "vfab up --libdir $libs ${ssh_opt[*]}"
V up --libdir "$libs" "${ssh_opt[@]}" >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

# --- vfab run ---------------------------------------------------------------------
note "scheduler variables"
V run -- bash -c 'echo $NODE_RANK $NNODES $MASTER_ADDR $(hostname)' >"$VFAB_TMP/vars" ||
	fail "vfab run of a succeeding command exited $?"
sort "$VFAB_TMP/vars" >"$VFAB_TMP/vars.sorted"
printf 'node0: 0 2 198.18.0.1 node0\nnode1: 1 2 198.18.0.1 node1\n' >"$VFAB_TMP/vars.want"
diff -u "$VFAB_TMP/vars.want" "$VFAB_TMP/vars.sorted" || fail "wrong variables or prefixes"
V run -- bash -c 'echo $RANK $WORLD_SIZE $MASTER_PORT $VFAB_NODE $VFAB_FABRIC' | sort >"$VFAB_TMP/vars2"
printf 'node0: 0 2 29500 node0 %s\nnode1: 1 2 29500 node1 %s\n' "$F" "$F" | diff -u - "$VFAB_TMP/vars2" ||
	fail "wrong RANK/WORLD_SIZE/MASTER_PORT/VFAB_*"

note "--nodes picks and orders the nodes; the first one is the master"
out=$(V run --nodes node1 --port 1234 -- bash -c 'echo $NODE_RANK $NNODES $MASTER_ADDR $MASTER_PORT')
[ "$out" = "node1: 1 1 198.18.0.2 1234" ] && fail "NODE_RANK must count within --nodes: $out"
[ "$out" = "node1: 0 1 198.18.0.2 1234" ] || fail "--nodes node1: got '$out'"

note "stdout and stderr, a partial last line"
V run --nodes node0 -- bash -c 'echo out; echo err >&2; printf tail' >"$VFAB_TMP/mix" 2>/dev/null
printf 'node0: out\nnode0: err\nnode0: tail\n' | diff -u - "$VFAB_TMP/mix" || fail "output lines"

note "a failing node fails the run, and is named"
rc=0
V run -- bash -c 'exit $((NODE_RANK * 3))' >/dev/null 2>"$VFAB_TMP/fail.err" || rc=$?
[ "$rc" = 3 ] || fail "expected exit 3 from the failing node, got $rc"
grep -q 'vfab run: 1 of 2 nodes failed: node1 (exit 3)' "$VFAB_TMP/fail.err" ||
	{ show "$VFAB_TMP/fail.err"; fail "no summary naming node1"; }
rc=0
V run -- /nonexistent/program >/dev/null 2>&1 || rc=$?
[ "$rc" = 127 ] || fail "a missing program must exit 127, got $rc"
rc=0
V run --nodes node9 -- true 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "an unknown node is a usage error (2), got $rc"

note "SIGTERM reaches every node's process group"
# Not through V(): $! must be vfab itself, not a subshell.
"$VFAB" --fabric "$F" run -- \
	bash -c "trap 'echo TERM; exit 5' TERM; echo up; while :; do sleep 0.05; done # $MARK" \
	>"$VFAB_TMP/sig" 2>&1 &
run_pid=$!
VFAB_SERVER_PIDS+=("$run_pid")
for i in $(seq 100); do
	[ "$(grep -c ': up$' "$VFAB_TMP/sig" || true)" = 2 ] && break
	sleep 0.05
done
[ "$(grep -c ': up$' "$VFAB_TMP/sig" || true)" = 2 ] || { show "$VFAB_TMP/sig"; fail "nodes did not start"; }
kill -TERM "$run_pid"
rc=0
wait_pid "$run_pid" 10 || rc=$?
[ "$rc" = 5 ] || { show "$VFAB_TMP/sig"; fail "expected the nodes' exit 5 after SIGTERM, got $rc"; }
grep -q '^node0: TERM$' "$VFAB_TMP/sig" && grep -q '^node1: TERM$' "$VFAB_TMP/sig" ||
	{ show "$VFAB_TMP/sig"; fail "a node did not get SIGTERM"; }
sleep 0.2
! pgrep -f "$MARK" >/dev/null || fail "node processes outlived vfab run"

# --- names and launcher files -----------------------------------------------------
note "/etc/hosts in the nodes"
[ "$(V exec node0 -- getent hosts node1 | awk '{print $1, $2, $3}')" = "198.18.0.2 node1 node1.vfab" ] ||
	fail "getent hosts node1 in node0: $(V exec node0 -- getent hosts node1)"
[ "$(V exec node1 -- getent hosts node0.vfab | awk '{print $1}')" = 198.18.0.1 ] ||
	fail "node0.vfab does not resolve in node1"
! grep -q "node1.vfab" /etc/hosts || fail "the host's /etc/hosts was changed"
printf 'node0 slots=1\nnode1 slots=1\n' | diff -u - "/run/vfab/$F/hostfile" || fail "hostfile"
printf 'node0\nnode1\n' | diff -u - "/run/vfab/$F/hosts" || fail "hosts list"

# --- carried libraries ------------------------------------------------------------
note "--libdir: the nodes' own ld.so.cache, without LD_LIBRARY_PATH"
V exec node0 -- ldconfig -p | grep -F "=> $libs/libibverbs.so.1" >/dev/null ||
	fail "libibverbs of $libs is not in node0's ld.so cache"
V exec node1 -- env -u LD_LIBRARY_PATH ldd /usr/bin/ibv_devinfo | grep -F "$libs/libibverbs.so.1" >/dev/null ||
	fail "ibv_devinfo in node1 does not load libibverbs from $libs"
V exec node1 -- env -u LD_LIBRARY_PATH ibv_devinfo -l | grep mlx5_0 >/dev/null ||
	fail "ibv_devinfo with the carried libibverbs does not list mlx5_0"
! ldconfig -p | grep -F "$libs" >/dev/null || fail "the host's ld.so cache lists $libs"
V status --json | grep -F "\"libdirs\":[\"$libs\"]" >/dev/null || fail "status does not show the libdir"

# --- sshd in every node -----------------------------------------------------------
if [ "$have_sshd" = 1 ]; then
	note "ssh between nodes"
	[ "$(V exec node0 -- ssh node1 hostname)" = node1 ] || fail "ssh node1 hostname from node0"
	[ "$(V exec node1 -- ssh -o PasswordAuthentication=no node0.vfab hostname)" = node0 ] ||
		fail "ssh -o PasswordAuthentication=no node0.vfab (DeepSpeed style) from node1"
	[ "$(V ssh node1 hostname)" = node1 ] || fail "vfab ssh node1 hostname"
	rc=0
	V ssh node1 'exit 4' || rc=$?
	[ "$rc" = 4 ] || fail "vfab ssh must return the remote status (4), got $rc"
	# A login lands in the node's namespaces, under the node's seccomp filter.
	[ "$(V ssh --from node1 node0 readlink /proc/self/ns/net)" = "$(V exec node0 readlink /proc/self/ns/net)" ] ||
		fail "an ssh session in node0 is not in node0's network namespace"
	V ssh node1 grep Seccomp_filters /proc/self/status | grep -v ':\s*0$' >/dev/null ||
		fail "an ssh session has no seccomp filter"
	V ssh node0 env -u LD_LIBRARY_PATH ibv_devinfo -l | grep mlx5_0 >/dev/null ||
		fail "ibv_devinfo over ssh does not see mlx5_0"
	V status >"$VFAB_TMP/status" || { show "$VFAB_TMP/status"; fail "status is not healthy with sshd"; }
	grep -q 'sshd [0-9]' "$VFAB_TMP/status" || fail "status does not show the sshds"
	sshd_created=0
	[ -e "/run/vfab/$F/run-sshd-created" ] && sshd_created=1
else
	rc=0
	V ssh node1 true 2>/dev/null || rc=$?
	[ "$rc" = 1 ] || fail "vfab ssh without sshd must exit 1, got $rc"
fi

# --- down leaves nothing ----------------------------------------------------------
note "down"
V down >/dev/null || fail "vfab down"
! pgrep -f "/run/vfab/$F/ssh/sshd-" >/dev/null || fail "an sshd outlived vfab down"
[ ! -e "/run/vfab/$F" ] || fail "run dir left"
[ -z "$(ip netns list | grep "vfab-$F-" || true)" ] || fail "namespaces left"
if [ "$have_sshd" = 1 ] && [ "$sshd_created" = 1 ] &&
	! ls /run/vfab/*/run-sshd-created >/dev/null 2>&1; then
	[ ! -e /run/sshd ] || fail "/run/sshd (created by this fabric) left behind"
fi
[ "$have_sshd" = 1 ] || exit 77
note "ok"
