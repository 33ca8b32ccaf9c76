#!/usr/bin/env bash
# ucx.sh [perftest|sockaddr SECONDS]: UCX (Debian's ucx-utils) judges the
# fabric between node0 and node1, on a 2-node fabric of its own
# ($VFAB_FABRIC), with nothing but UCX_NET_DEVICES=mlx5_0:1: UCX picks the GID
# and the transports itself, as it would between two hosts.
#
#   perftest  ucx_perftest, UCP: tag_lat tag_bw ucp_put_bw ucp_get ucp_am_bw
#             stream_bw; UCT: am_lat and am_bw over -x rc_verbs and -x
#             ud_verbs. Every UCP client's endpoint configuration (the
#             ep_cfg lines of UCX_LOG_LEVEL=info) must name rc_verbs/mlx5_0:1
#             or ud_verbs/mlx5_0:1 and no shared-memory transport (sysv,
#             posix, cma, knem, xpmem): nodes are separate hosts. Each run
#             must also move its bytes through node0's HCA (port counters).
#   sockaddr  ucx_sockaddr (this folder): a UCP client and server connected
#             through a listener and a socket address, exchanging verified
#             messages for SECONDS (CI: 120); the same ep_cfg rule, and no
#             tcp lane. UCX connects through its rdmacm connection manager
#             (vfab's RDMA CM), so nothing but UCX_NET_DEVICES=mlx5_0:1 is set
#             here either.
#
# Everything runs under a timeout; servers are killed on exit; the fabric is
# taken down on exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-perftest}
F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }
UCX_ENV=(env UCX_NET_DEVICES=mlx5_0:1)
COUNTERS=/sys/class/infiniband/mlx5_0/ports/1/counters

command -v ucx_perftest >/dev/null || fail "ucx_perftest not found (apt-get install ucx-utils)"

ucx_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap ucx_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	V down || fail "could not take down the stale fabric $F"
fi
note "vfab up (fabric $F)"
V up >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

# xmit_bytes NODE: bytes node's mlx5_0 port 1 has sent (the counter is in
# 4-byte words, as on a ConnectX).
xmit_bytes()
{
	sleep 0.6 # vfabd refreshes the nodes' counter files every 250 ms
	echo $(($(vx "$1" cat "$COUNTERS/port_xmit_data") * 4))
}

# The checks that only hold once each node is a host of its own (its own
# boot_id, IPC namespace and /dev/shm): while nodes share them, UCX takes the
# two nodes for one host and moves data through sysv/cma, past the HCA. They
# are collected and reported at the end, so that every run is still judged.
IDENTITY_FAILS=()
identity_fail()
{
	echo "FAIL (node identity): $*" >&2
	IDENTITY_FAILS+=("$*")
}

# check_ep_cfg NAME LOG [last]: the endpoint configurations UCX chose between
# the nodes use the HCA, and no shared memory. With "last", only the final
# one: an endpoint made through a connection manager first runs over the
# CM's own transport (tcp/eth0) until its wireup is done.
check_ep_cfg()
{
	local name=$1 log=$2 cfg shm
	cfg=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$log" || true)
	[ "${3:-}" != last ] || cfg=$(echo "$cfg" | tail -n 1)
	[ -n "$cfg" ] || { show "$log"; fail "$name: UCX printed no ep_cfg line"; }
	echo "$cfg" | sed "s/^/    $name: /"
	! echo "$cfg" | grep -E '(^|[ (])tcp/' >/dev/null || fail "$name: UCX moves data over TCP, not the HCA"
	shm=$(echo "$cfg" | grep -Eo '(cma|sysv|posix|knem|xpmem)/[a-z0-9]*' | sort -u | tr '\n' ' ' || true)
	[ -z "$shm" ] || identity_fail "$name: UCX moves data between nodes through shared memory ($shm)"
	if ! echo "$cfg" | grep -Eq '(rc_verbs|ud_verbs)/mlx5_0:1'; then
		[ -n "$shm" ] || { show "$log"; fail "$name: no endpoint over rc_verbs/mlx5_0:1 or ud_verbs/mlx5_0:1"; }
		identity_fail "$name: no endpoint over rc_verbs/mlx5_0:1 or ud_verbs/mlx5_0:1, only shared memory"
	fi
}

# check_bytes NAME NODE BEFORE MIN LOG: NODE's HCA sent at least MIN bytes
# since BEFORE.
check_bytes()
{
	local name=$1 node=$2 before=$3 min=$4 sent
	sent=$(($(xmit_bytes "$node") - before))
	echo "    $name: $node's mlx5_0 sent $sent bytes"
	[ "$sent" -ge "$min" ] || identity_fail "$name: $node's mlx5_0 sent $sent bytes, expected >= $min"
}

# perftest NAME PORT NODE MIN_BYTES ARGS...: ucx_perftest server in node1,
# client in node0 with ARGS; NODE's HCA must send at least MIN_BYTES during it.
perftest()
{
	local name=$1 port=$2 node=$3 min=$4 rc=0 src=0 before
	shift 4
	local srv=$VFAB_TMP/$name.srv cli=$VFAB_TMP/$name.cli
	note "ucx_perftest $*"
	before=$(xmit_bytes "$node")
	start_server node1 "$srv" timeout 60 "${UCX_ENV[@]}" ucx_perftest -p "$port"
	wait_listen node1 "$port" 20 || { show "$srv"; fail "$name: server did not listen on $port"; }
	timeout 60 "$VFAB" --fabric "$F" exec node0 -- "${UCX_ENV[@]}" UCX_LOG_LEVEL=info \
		ucx_perftest node1 -p "$port" "$@" >"$cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 15 || src=$?
	if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
		show "$srv" "$cli"
		fail "$name: client exited $rc, server exited $src"
	fi
	grep -E '^Final:' "$cli" | sed "s/^/    $name: /" || { show "$cli"; fail "$name: no Final line"; }
	check_bytes "$name" "$node" "$before" "$min"
	case " $* " in
	*" -x "*) ;; # UCT tests name their transport; no UCP endpoint is made
	*) check_ep_cfg "$name" "$cli" ;;
	esac
}

run_perftest()
{
	# Ports are distinct per run so that a TIME_WAIT never delays the next.
	# MIN_BYTES: a fraction of what each run moves from node0, enough to
	# tell the fabric from shared memory.
	# ucp_get: the data is sent by node1's HCA (READ responses).
	perftest tag_lat 18561 node0 4000 -t tag_lat -s 8 -n 2000
	perftest tag_bw 18562 node0 $((100 << 20)) -t tag_bw -s 1048576 -n 200
	perftest ucp_put_bw 18563 node0 $((100 << 20)) -t ucp_put_bw -s 1048576 -n 200
	perftest ucp_get 18564 node1 $((100 << 20)) -t ucp_get -s 1048576 -n 200
	perftest ucp_am_bw 18565 node0 $((100 << 20)) -t ucp_am_bw -s 1048576 -n 200
	perftest stream_bw 18566 node0 $((100 << 20)) -t stream_bw -s 1048576 -n 200
	local tl port=18567
	for tl in rc_verbs ud_verbs; do
		perftest "uct_${tl}_am_lat" $port node0 4000 -x "$tl" -d mlx5_0:1 -t am_lat -s 8 -n 2000
		perftest "uct_${tl}_am_bw" $((port + 1)) node0 $((1 << 20)) \
			-x "$tl" -d mlx5_0:1 -t am_bw -D bcopy -s 1024 -n 20000
		port=$((port + 2))
	done
}

run_sockaddr()
{
	local secs=$1 port=18571 rc=0 src=0 before
	local prog=$VFAB_BIN/ucx_sockaddr srv=$VFAB_TMP/sockaddr.srv cli=$VFAB_TMP/sockaddr.cli
	[ -x "$prog" ] || fail "$prog missing (build the tests)"
	note "ucx_sockaddr, $secs s"
	before=$(xmit_bytes node0)
	start_server node1 "$srv" timeout $((secs + 60)) "${UCX_ENV[@]}" UCX_LOG_LEVEL=info \
		"$prog" server "$port" "$secs"
	# An RDMA CM listener has no TCP socket to look for: the server says so.
	for _ in $(seq 200); do
		grep -q '^listening' "$srv" 2>/dev/null && break
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^listening' "$srv" || { show "$srv"; fail "ucx_sockaddr server did not listen on $port"; }
	timeout $((secs + 60)) "$VFAB" --fabric "$F" exec node0 -- "${UCX_ENV[@]}" UCX_LOG_LEVEL=info \
		"$prog" client node1 "$port" "$secs" >"$cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 30 || src=$?
	grep -E '^(progress|result)' "$cli" | sed 's/^/    client: /' || true
	if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
		show "$srv" "$cli"
		fail "ucx_sockaddr: client exited $rc, server exited $src"
	fi
	grep -q '^result role=client' "$cli" || { show "$cli"; fail "ucx_sockaddr: no client result"; }
	grep -q '^result role=server' "$srv" || { show "$srv"; fail "ucx_sockaddr: no server result"; }
	check_ep_cfg sockaddr "$cli" last
	check_bytes sockaddr node0 "$before" $((10 << 20))
}

case $mode in
perftest) run_perftest ;;
sockaddr) run_sockaddr "${2:?sockaddr needs SECONDS}" ;;
*) fail "unknown mode '$mode' (perftest or sockaddr SECONDS)" ;;
esac
if [ ${#IDENTITY_FAILS[@]} -gt 0 ]; then
	echo "FAIL: ${#IDENTITY_FAILS[@]} check(s) show the nodes sharing one host's memory (node identity):" >&2
	printf '  %s\n' "${IDENTITY_FAILS[@]}" >&2
	exit 1
fi
note "ok"
