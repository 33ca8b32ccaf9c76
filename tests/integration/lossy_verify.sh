#!/usr/bin/env bash
# lossy_verify.sh PORT [ARGS...]: bin/lossy_verify (tests/bench) across the
# nodes of the test fabric: the server in node1, the client in node0, both
# with ARGS. Its patterned RDMA WRITEs of mixed sizes, numbered SENDs and
# READs back must arrive intact (verdict=ok, both exit 0). The shaping
# benchmark runs it over lossy links; here it checks the bytes themselves,
# e.g. with copy engines forced on (VFAB_COPY_ENGINES in the environment).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || fail "usage: lossy_verify.sh PORT [ARGS...]"
port=$1
shift
prog=$VFAB_BIN/lossy_verify
[ -x "$prog" ] || fail "$prog missing (build it first)"
srv=$VFAB_TMP/server.log cli=$VFAB_TMP/client.log

start_server node1 "$srv" "$prog" -p "$port" "$@"
wait_listen node1 "$port" 30 || { show "$srv"; fail "the server did not listen on $port"; }
rc=0
timeout 240 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$prog" -p "$port" "$@" "$NODE1_IP" \
	>"$cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 60 || src=$?
show "$srv" "$cli"
[ "$rc" = 0 ] || fail "the client exited $rc"
[ "$src" = 0 ] || fail "the server exited $src"
grep -q '^verdict=ok$' "$cli" || fail "the client's verdict is not ok"
note "lossy_verify: $(grep -E '^write_gbit|^verdict' "$cli" | tr '\n' ' ')"
