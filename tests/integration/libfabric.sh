#!/usr/bin/env bash
# libfabric.sh: libfabric's verbs provider judges the HCAs as libfabric users
# (MPICH/ofi, Intel MPI, OpenSHMEM, storage) meet them, with libfabric-bin's
# unmodified fi_info and fi_pingpong between node0 and node1 of the shared
# test fabric:
#   - fi_info -p verbs in node0 lists mlx5_0 for FI_EP_MSG (verbs over the
#     RDMA CM), FI_EP_RDM (verbs;ofi_rxm) and FI_EP_DGRAM (mlx5_0-dgram).
#     ofi_rxm's probe binds the RDMA CM to "localhost", which the kernel's
#     CM accepts as the wildcard address (cma_any_addr);
#   - fi_pingpong with data checks (-c), server in node1, client in node0:
#     msg endpoints, rdm over ofi_rxm (messages and tagged messages, as MPI
#     uses them), rdm over ofi_rxd and dgram;
#   - node0's mlx5_0 port counters carried the bytes.
# Skipped (exit 77) without libfabric-bin.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v fi_pingpong >/dev/null || {
	note "fi_pingpong not found (apt-get install libfabric-bin); skipped"
	exit 77
}
COUNTERS=/sys/class/infiniband/mlx5_0/ports/1/counters
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log

# fi_info's entries as "provider type domain" lines.
vx node0 fi_info -p verbs >"$VFAB_TMP/info.log" 2>&1 || { show "$VFAB_TMP/info.log"; fail "fi_info -p verbs exited non-zero"; }
entries=$(awk '$1 == "provider:" { p = $2 } $1 == "domain:" { d = $2 }
	$1 == "type:" { print p, $2, d }' "$VFAB_TMP/info.log")
for want in "verbs FI_EP_MSG mlx5_0" "verbs;ofi_rxm FI_EP_RDM mlx5_0" "verbs FI_EP_DGRAM mlx5_0-dgram"; do
	grep -qxF "$want" <<<"$entries" || { show "$VFAB_TMP/info.log"; fail "fi_info lists no '$want'"; }
done
note "fi_info -p verbs: $(sort -u <<<"$entries" | tr '\n' ',' | sed 's/,$//; s/,/, /g')"

xmit_bytes()
{
	sleep 0.6 # vfabd refreshes the nodes' counter files every 250 ms
	echo $(($(vx node0 cat "$COUNTERS/port_xmit_data") * 4))
}
before=$(xmit_bytes)

# pingpong CTRL_PORT ARGS...: fi_pingpong ARGS with data checks, the server
# in node1 and the client in node0 on TCP control port CTRL_PORT (distinct
# per run, so that no TIME_WAIT of one delays the next).
pingpong()
{
	local port=$1 rc=0 src=0 last
	shift
	start_server node1 "$srv" fi_pingpong "$@" -c -I 100 -B "$port"
	wait_listen node1 "$port" || { show "$srv"; fail "fi_pingpong $* server did not listen"; }
	timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
		fi_pingpong "$@" -c -I 100 -P "$port" "$NODE1_IP" >"$cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 30 || src=$?
	[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$srv" "$cli"; fail "fi_pingpong $*: client $rc, server $src"; }
	last=$(awk '$1 ~ /^[0-9]+[kmg]?$/ { l = $0 } END { print l }' "$cli")
	[ -n "$last" ] || { show "$cli"; fail "fi_pingpong $*: no results"; }
	note "fi_pingpong $*: largest size: $(echo "$last" | awk '{ printf "%s B, %s MB/s, %s us/xfer", $1, $6, $7 }')"
}

pingpong 47611 -p verbs -e msg -S all
pingpong 47612 -p 'verbs;ofi_rxm' -e rdm -S all
pingpong 47613 -p 'verbs;ofi_rxm' -e rdm -m tagged -S all
pingpong 47614 -p 'verbs;ofi_rxd' -e rdm -S 65536
pingpong 47615 -p verbs -e dgram -S all

sent=$(($(xmit_bytes) - before))
note "node0's mlx5_0 sent $sent bytes"
# The msg and rxm runs alone move 100 x 6 MiB each way at their largest size.
[ "$sent" -ge $((3 * 100 * (6 << 20))) ] || fail "node0's mlx5_0 sent only $sent bytes"
