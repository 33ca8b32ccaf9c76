# shellcheck shell=bash
# Helpers shared by the integration tests and the benchmark (sourced, not run).
#
# Environment (set by ctest, see integration.cmake):
#   VFAB_BUILD_DIR  build directory holding bin/vfab and the test programs
#                   (default: <repo>/build)
#   VFAB_FABRIC     fabric the tests run against (default: tint)
#
# Every server a test starts in a node is remembered and killed on exit; the
# temp dir is removed. Tests fail with `fail MESSAGE` (exit 1).

VFAB_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VFAB_BUILD_DIR=${VFAB_BUILD_DIR:-$VFAB_REPO/build}
VFAB_BIN=$VFAB_BUILD_DIR/bin
VFAB=$VFAB_BIN/vfab
VFAB_FABRIC=${VFAB_FABRIC:-tint}
# Addresses of the default fabric, used by the scripts that source this file.
# shellcheck disable=SC2034
NODE0_IP=198.18.0.1 NODE1_IP=198.18.0.2

# The sanitizer run (quickstart's run_asan_integration) preloads the ASan and
# UBSan runtimes into every program a test starts; procps-ng 4.0.2's pgrep
# deadlocks in its own main with them (textdomain() waits on glibc's
# _nl_state_lock). The tests' process lookups are not under test: they run
# without the preload.
pgrep()
{
	LD_PRELOAD='' command pgrep "$@"
}

VFAB_SERVER_PIDS=()
VFAB_TMP=$(mktemp -d "/tmp/vfab-test-$(basename "$0" .sh).XXXXXX")

fail()
{
	echo "FAIL: $*" >&2
	exit 1
}

note()
{
	echo "--- $*"
}

vfab_cleanup()
{
	local pid
	for pid in "${VFAB_SERVER_PIDS[@]}"; do
		kill_tree "$pid"
	done
	rm -rf "$VFAB_TMP"
}
trap vfab_cleanup EXIT

# descendants PID: the pids of PID's children, their children, and so on.
descendants()
{
	local kid
	for kid in $(pgrep -P "$1" || true); do
		echo "$kid"
		descendants "$kid"
	done
}

# kill_tree PID: ends a process we started and all its descendants (vfab exec
# may fork the command rather than exec it, and a server may fork one child
# per client), TERM first, then KILL.
kill_tree()
{
	local pid=$1 kids
	kill -0 "$pid" 2>/dev/null || return 0
	kids=$(descendants "$pid")
	kill "$pid" $kids 2>/dev/null || true
	for _ in $(seq 20); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" $kids 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

[ -x "$VFAB" ] || fail "vfab CLI not found at $VFAB (build first; VFAB_BUILD_DIR=$VFAB_BUILD_DIR)"

# vx NODE CMD...: run CMD inside NODE of the test fabric.
vx()
{
	local node=$1
	shift
	"$VFAB" --fabric "$VFAB_FABRIC" exec "$node" -- "$@"
}

# start_server NODE LOG CMD...: CMD in NODE in the background, output to LOG;
# its pid is left in SERVER_PID and remembered for cleanup.
start_server()
{
	local node=$1 log=$2
	shift 2
	vx "$node" "$@" >"$log" 2>&1 &
	SERVER_PID=$!
	VFAB_SERVER_PIDS+=("$SERVER_PID")
}

# start_asyncwatch NODE LOG: rdma-core's ibv_asyncwatch on mlx5_0 in NODE,
# writing to LOG; returns once its context is open and known to vfabd, so
# that it sees every event after that. Its pid in SERVER_PID.
start_asyncwatch()
{
	start_server "$1" "$2" ibv_asyncwatch -d mlx5_0
	for _ in $(seq 100); do
		grep -q 'async event FD' "$2" 2>/dev/null && break
		sleep 0.05
	done
	grep -q 'async event FD' "$2" || { show "$2"; fail "ibv_asyncwatch did not start in $1"; }
	sleep 0.2 # its context's HELLO reached vfabd
}

# wait_listen NODE PORT [SECONDS]: until something listens on TCP PORT in NODE.
# The RDMA tools listen only after they opened the device, so this also says
# that the server's verbs set-up went through.
wait_listen()
{
	local node=$1 port=$2 secs=${3:-20}
	for _ in $(seq $((secs * 10))); do
		if [ -n "$(vx "$node" ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
			return 0
		fi
		if [ -n "${SERVER_PID:-}" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
			return 1 # the server already exited
		fi
		sleep 0.1
	done
	return 1
}

# wait_cm_listen PORT: until a live process listens on RDMA CM port PORT (its
# entry in the fabric's listener directory, in VFAB_RUN_DIR when set, "CM_QPN PID START"; a killed
# one's stays) or the server (SERVER_PID) exited.
wait_cm_listen()
{
	local f pid
	for _ in $(seq 300); do
		for f in "${VFAB_RUN_DIR:-/run/vfab/$VFAB_FABRIC}/cm"/*-"$1"; do
			[ -f "$f" ] || continue
			pid=$(awk '{print $2}' "$f" 2>/dev/null || true)
			[ -n "$pid" ] && [ -d "/proc/$pid" ] && return 0
		done
		kill -0 "$SERVER_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# wait_pid PID SECONDS: exit status of a background process, 124 on timeout
# (then it is killed).
wait_pid()
{
	local pid=$1 secs=$2 rc
	for _ in $(seq $((secs * 10))); do
		if ! kill -0 "$pid" 2>/dev/null; then
			rc=0
			wait "$pid" || rc=$?
			return $rc
		fi
		sleep 0.1
	done
	kill_tree "$pid"
	return 124
}

# show LOG...: print logs (for the ctest --output-on-failure view).
show()
{
	local f
	for f in "$@"; do
		echo "===== $(basename "$f")"
		cat "$f"
	done
}

# ping_median_us NODE ADDR: the median of 21 ping round trips from NODE to
# ADDR, 50 ms apart, in microseconds (a median: this VM's scheduler adds the
# odd millisecond to a single round trip).
ping_median_us()
{
	vx "$1" ping -c 21 -i 0.05 -n "$2" |
		awk -F'time=' 'NF > 1 { split($2, t, " "); print t[1] * 1000 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.0f\n", v[int((NR + 1) / 2)] }'
}

# num_between VALUE LOW HIGH: LOW < VALUE < HIGH (floats); HIGH may be "inf".
num_between()
{
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN {
		if (v !~ /^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) exit 1
		exit !(v + 0 > lo + 0 && (hi == "inf" || v + 0 < hi + 0))
	}'
}

# perftest_value LOG HEADER FIELD: perftest prints its result as a header line
# (" #bytes  #iterations  BW peak[..]  BW average[..] ..." or " #bytes
# #iterations  t_min[usec] t_max[usec] t_typical[usec] ...") followed by one
# line of numbers; prints field number FIELD of the first numeric line after
# the header that contains HEADER (which proves the column is the one meant).
perftest_value()
{
	awk -v want="$2" -v field="$3" '
		index($0, "#bytes") && index($0, want) { armed = 1; next }
		armed && $1 ~ /^[0-9]+$/ { print $field; exit }' "$1"
}

# perftest_bw CLIENT_LOG SERVER_LOG: the "BW average" a perftest pair measured.
# perftest converts cycles to time with a CPU frequency it calibrates at
# start against gettimeofday; on a loaded host that calibration can fail
# ("Correlation coefficient r^2: ... < 0.9") and that side then prints 0.00
# for every rate although its transfers ran. The client's figure is taken
# unless its calibration failed, in which case the server's is.
perftest_bw()
{
	if grep -q '^Correlation coefficient r^2' "$1"; then
		perftest_value "$2" "BW average" 4
	else
		perftest_value "$1" "BW average" 4
	fi
}

# rootless_begin USER: creates the test user USER (rootless_end removes it,
# with every process of it and its run root) and writes $RL_VFAB, a vfab
# that runs as USER: a fabric without root (netns/userns.h). A build USER
# cannot reach (a clone under a mode-700 /root) is installed into $VFAB_TMP
# first (cmake --install: vfab finds its parts next to itself). Returns 1,
# with a note, where unprivileged user namespaces are not allowed. Sets
# RL_UID and RL_GID.
RL_USER='' RL_UID='' RL_GID=''
rootless_begin()
{
	local vfab_bin=$VFAB_BIN/vfab lib
	RL_USER=$1
	userdel "$RL_USER" 2>/dev/null || true
	# A login shell: `vfab up --ssh` lets the user in.
	useradd --system --no-create-home --shell /bin/sh "$RL_USER" ||
		fail "cannot create test user $RL_USER"
	RL_UID=$(id -u "$RL_USER") RL_GID=$(id -g "$RL_USER")
	chmod 755 "$VFAB_TMP"
	lib=$(ls "$VFAB_BUILD_DIR"/lib/libvfab-rdmav*.so | head -1)
	if ! setpriv --reuid="$RL_UID" --regid="$RL_GID" --clear-groups test -x "$vfab_bin" ||
		! setpriv --reuid="$RL_UID" --regid="$RL_GID" --clear-groups test -r "$lib"; then
		if [ ! -x "$VFAB_TMP/inst/bin/vfab" ]; then
			note "the build is out of reach of $RL_USER: installed into $VFAB_TMP/inst"
			cmake --install "$VFAB_BUILD_DIR" --prefix "$VFAB_TMP/inst" >"$VFAB_TMP/inst.log" 2>&1 ||
				{ show "$VFAB_TMP/inst.log"; fail "cmake --install for $RL_USER"; }
		fi
		vfab_bin=$VFAB_TMP/inst/bin/vfab
	fi
	RL_VFAB=$VFAB_TMP/vfab-as-$RL_USER
	cat >"$RL_VFAB" <<EOS
#!/bin/sh
exec setpriv --reuid=$RL_UID --regid=$RL_GID --clear-groups "$vfab_bin" "\$@"
EOS
	chmod 755 "$RL_VFAB"
	"$RL_VFAB" help >/dev/null 2>&1 || fail "vfab does not run as $RL_USER"
	if ! setpriv --reuid="$RL_UID" --regid="$RL_GID" --clear-groups unshare -U true 2>/dev/null; then
		note "unprivileged user namespaces are not allowed here (see vfab doctor)"
		return 1
	fi
}

# rootless_end FABRIC...: the user's fabrics down, its processes (all this
# test's: the user is) ended by pid, its run root and the user removed.
rootless_end()
{
	local f pids
	[ -n "$RL_UID" ] || return 0
	for f in "$@"; do
		"$RL_VFAB" --fabric "$f" down >/dev/null 2>&1 || true
	done
	pids=$(pgrep -u "$RL_UID" || true)
	[ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
	rm -rf "/tmp/vfab-$RL_UID"
	userdel "$RL_USER" 2>/dev/null || true
	RL_UID=''
}
