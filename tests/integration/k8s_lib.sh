# shellcheck shell=bash
# Helpers of the Kubernetes rehearsal tests (k8s.sh, k8s_shared.sh; sourced
# after lib.sh). They act on $VFAB_FABRIC.

# The seed's one-liner (../shared/seeds/runai-multinode-roce-nccl.txt, step
# 2.3) with the device of these configs.
ONELINER=$(
	cat <<'SEED'
grep 'RoCE v2' $(grep '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/mlx5_0/ports/1/gids/* | cut -d ':' -f 1 | sed 's/gids/gid_attrs\/types/') | sed -e 's/.*\/\([0-9]*\):.*/\1/'
SEED
)

# pingpong NAME SERVER_NODE SERVER_G CLIENT_NODE CLIENT_G PORT: ibv_rc_pingpong
# between two nodes; the client's status in RC, its output in $VFAB_TMP/NAME.cli.
pingpong()
{
	local name=$1 port=$6
	start_server "$2" "$VFAB_TMP/$name.srv" ibv_rc_pingpong -d mlx5_0 -g "$3" -p "$port"
	wait_listen "$2" "$port" 30 || { show "$VFAB_TMP/$name.srv"; fail "$name: server did not listen"; }
	RC=0
	timeout 90 "$VFAB" --fabric "$VFAB_FABRIC" exec "$4" -- ibv_rc_pingpong -d mlx5_0 -g "$5" \
		-p "$port" "$2" >"$VFAB_TMP/$name.cli" 2>&1 || RC=$?
	wait_pid "$SERVER_PID" 30 || true
}

pingpong_ok()
{
	pingpong "$@"
	[ "$RC" = 0 ] && grep -Eq '^[0-9]+ iters in ' "$VFAB_TMP/$1.cli" ||
		{ show "$VFAB_TMP/$1.srv" "$VFAB_TMP/$1.cli"; fail "$1: ibv_rc_pingpong failed ($RC)"; }
}
