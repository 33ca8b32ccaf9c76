#!/usr/bin/env bash
# Unmodified ibv_devices / ibv_devinfo inside a node see mlx5_0 as a RoCE
# ConnectX port, with a clean environment (no RDMAV_DRIVERS, no LD_PRELOAD).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

clean_env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)

vx node0 "${clean_env[@]}" ibv_devices >"$VFAB_TMP/devices" 2>&1 ||
	{ show "$VFAB_TMP/devices"; fail "ibv_devices failed"; }
grep -Eq '^[[:space:]]+mlx5_0[[:space:]]+[0-9a-f]{16}$' "$VFAB_TMP/devices" ||
	{ show "$VFAB_TMP/devices"; fail "ibv_devices does not list mlx5_0 with its GUID"; }

for node in node0 node1; do
	out=$VFAB_TMP/devinfo.$node
	vx "$node" "${clean_env[@]}" ibv_devinfo -v >"$out" 2>&1 ||
		{ show "$out"; fail "ibv_devinfo -v failed in $node"; }
	ip=$([ "$node" = node0 ] && echo "$NODE0_IP" || echo "$NODE1_IP")
	# shellcheck disable=SC2086 # split the dotted quad into 4 arguments
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	for want in \
		$'^hca_id:\tmlx5_0$' \
		$'^\ttransport:\t+InfiniBand \\(0\\)$' \
		$'^\tvendor_id:\t+0x02c9$' \
		$'^\t+state:\t+PORT_ACTIVE \\(4\\)$' \
		$'^\t+link_layer:\t+Ethernet$' \
		$'^\t+GID\\[  2\\]:\t+0000:0000:0000:0000:0000:ffff:'"$hex"', RoCE v1$' \
		$'^\t+GID\\[  3\\]:\t+::ffff:'"${ip//./\\.}"', RoCE v2$' \
		$'^\t+GID\\[  1\\]:\t+fe80::.*, RoCE v2$'; do
		grep -Eq "$want" "$out" || { show "$out"; fail "$node: ibv_devinfo -v lacks /$want/"; }
	done
	# Exactly one port and the IPv4 RoCE v2 GID only at index 3.
	[ "$(grep -c $'^\t\tport:' "$out")" = 1 ] || { show "$out"; fail "$node: expected one port"; }
	[ "$(grep -c "::ffff:$ip, RoCE v2" "$out")" = 1 ] || { show "$out"; fail "$node: GID duplicated"; }
done
note "ibv_devices and ibv_devinfo -v look like a ConnectX RoCE port in both nodes"
