#!/usr/bin/env bash
# GID tables as real clusters make them, each on a fabric of its own
# (README "Rehearse Kubernetes RDMA networking"):
#  (s) configs/gid-sparse.yaml ($VFAB_FABRIC_SPARSE): show_gids prints the
#      vendor's columns and its `grep v2 | grep <ipv4> | cut -f 3` idiom
#      works; two IPv4 addresses on eth1 make the seed's one-liner print two
#      indices; deleting an address leaves a hole (nothing moves up); the
#      peer's index, fixed, fails in node0 (empty entry: the QP's RTR
#      transition is refused), a RoCE v1 index across the spine fails with
#      "transport retry counter exceeded" (status 12), each node's own
#      one-liner index works and UCX picks it by itself; an address added
#      later takes the lowest free pair (the hole);
#  (6) configs/gid-ipv6only.yaml ($VFAB_FABRIC_V6): the seed's IPv4 one-liner
#      finds nothing, show_gids' IPv6 RoCE v2 entry (index 3) works;
#  (x) configs/k8s-exclusive.yaml ($VFAB_FABRIC_EXCL): every pod's table holds
#      only its own net1 address, at index 3, and pods on two hosts talk
#      with index 3 through the spine;
#  (v) configs/roce-vlan.yaml ($VFAB_FABRIC_VLAN): eth1.100 is a real 802.1Q
#      VLAN, its addresses and its link-local address enter mlx5_0's table
#      with gid_attrs/ndevs eth1.100, the one-liner's index 3 works over the
#      VLAN (skipped, and said so, on a kernel without 802.1Q VLANs).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_lib.sh"

FS=${VFAB_FABRIC_SPARSE:-tk8ss}
F6=${VFAB_FABRIC_V6:-tk8s6}
FX=${VFAB_FABRIC_EXCL:-tk8sx}
FV=${VFAB_FABRIC_VLAN:-tk8sv}

k8s_cleanup()
{
	vfab_cleanup
	for fab in "$FS" "$F6" "$FX" "$FV"; do
		"$VFAB" --fabric "$fab" down >/dev/null 2>&1 || true
	done
}
trap k8s_cleanup EXIT

for fab in "$FS" "$F6" "$FX" "$FV"; do
	if [ -e "/run/vfab/$fab" ] || [ -e "/dev/shm/vfab-$fab" ]; then
		note "a previous run left fabric $fab behind; taking it down first"
		"$VFAB" --fabric "$fab" down || fail "could not take down the stale fabric $fab"
	fi
done


# --- (s) sparse tables, several IPv4 addresses, RoCE v1 vs v2 -----------------------
VFAB_FABRIC=$FS
note "(s) vfab up configs/gid-sparse.yaml as $FS"
"$VFAB" --fabric "$FS" up "$VFAB_REPO/configs/gid-sparse.yaml" >"$VFAB_TMP/ups.log" 2>&1 ||
	{ show "$VFAB_TMP/ups.log"; fail "vfab up gid-sparse.yaml failed"; }

vx node0 show_gids >"$VFAB_TMP/sg0" || fail "show_gids failed in node0"
show "$VFAB_TMP/sg0"
[ "$(head -1 "$VFAB_TMP/sg0")" = "$(printf 'DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV')" ] ||
	fail "show_gids: not the vendor's header"
grep -qx "$(printf 'mlx5_0\t1\t5\t0000:0000:0000:0000:0000:ffff:c612:0101\t198.18.1.1  \tv2\teth1')" "$VFAB_TMP/sg0" ||
	fail "show_gids: no line for index 5 (198.18.1.1, v2, eth1)"
grep -qx "$(printf 'mlx5_0\t1\t2\tfd00:0198:0018:0001:0000:0000:0000:0101\t\t\tv1\teth1')" "$VFAB_TMP/sg0" ||
	fail "show_gids: no line for index 2 (the IPv6 address, v1)"
[ "$(tail -1 "$VFAB_TMP/sg0")" = n_gids_found=8 ] || fail "show_gids: n_gids_found is not 8"
idx=$(vx node0 bash -c "show_gids | grep v2 | grep 198.18.1.1 | cut -f 3" | head -1)
[ "$idx" = 5 ] || fail "show_gids | grep v2 | grep 198.18.1.1 | cut -f 3 printed '$idx', not 5"

out=$(vx node0 bash -c "$ONELINER" | tr '\n' ' ')
[ "$out" = "5 7 " ] || fail "node0: the one-liner printed '$out', not '5 7' (two IPv4 addresses)"

note "(s) vfab addr node0 del fd00:198:18:1::101/64 dev eth1: a hole at 2/3"
"$VFAB" --fabric "$FS" addr node0 del fd00:198:18:1::101/64 dev eth1 || fail "vfab addr del failed"
vx node0 show_gids >"$VFAB_TMP/sg0b"
show "$VFAB_TMP/sg0b"
[ "$(cut -f 3 "$VFAB_TMP/sg0b" | sed -n '3,$p' | grep -E '^[0-9]+$' | tr '\n' ' ')" = "0 1 4 5 6 7 " ] ||
	fail "after the delete node0's entries are not 0 1 4 5 6 7"
[ "$(vx node0 cat /sys/class/infiniband/mlx5_0/ports/1/gids/3)" = 0000:0000:0000:0000:0000:0000:0000:0000 ] ||
	fail "gids/3 of node0 is not empty"
I0=$(vx node0 bash -c "$ONELINER" | head -1)
I1=$(vx node1 bash -c "$ONELINER")
[ "$I0" = 5 ] && [ "$I1" = 3 ] || fail "one-liner: node0 '$I0' (want 5), node1 '$I1' (want 3)"

note "(s) a fixed index (node1's 3) in node0: an empty entry"
pingpong fixed3 node1 3 node0 3 18961
[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show "$VFAB_TMP/fixed3.cli"; fail "-g 3 in node0 exited $RC"; }
grep -q 'GID ::$' "$VFAB_TMP/fixed3.cli" || { show "$VFAB_TMP/fixed3.cli"; fail "-g 3 in node0 did not read the zero GID"; }
grep -q 'Failed to modify QP to RTR' "$VFAB_TMP/fixed3.cli" "$VFAB_TMP/fixed3.srv" ||
	{ show "$VFAB_TMP/fixed3.srv" "$VFAB_TMP/fixed3.cli"; fail "-g 3 failed, but not at the QP's RTR transition"; }

note "(s) RoCE v1 indices (node0 4, node1 2) across the spine: retry exceeded"
pingpong v1 node1 2 node0 4 18962
[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show "$VFAB_TMP/v1.cli"; fail "RoCE v1 across the spine exited $RC"; }
grep -q 'Failed status transport retry counter exceeded (12)' "$VFAB_TMP/v1.cli" ||
	{ show "$VFAB_TMP/v1.cli"; fail "RoCE v1 across the spine failed, but not with status 12"; }

note "(s) each node's own one-liner index: node0 $I0, node1 $I1"
pingpong_ok own node1 "$I1" node0 "$I0" 18963
grep -q 'GID ::ffff:198.18.1.1$' "$VFAB_TMP/own.cli" || fail "node0 did not use ::ffff:198.18.1.1"

note "(s) UCX chooses the GID itself (no UCX_IB_GID_INDEX): node0 5"
ucx=(env UCX_NET_DEVICES=mlx5_0:1 UCX_TLS=rc_verbs,ud_verbs UCX_LOG_LEVEL=debug)
start_server node1 "$VFAB_TMP/ucx.srv" "${ucx[@]}" ucx_perftest -p 18966
wait_listen node1 18966 30 || { show "$VFAB_TMP/ucx.srv"; fail "ucx_perftest server did not listen"; }
rc=0
timeout 90 "$VFAB" --fabric "$FS" exec node0 -- "${ucx[@]}" ucx_perftest -p 18966 -t tag_bw -n 1000 \
	node1 >"$VFAB_TMP/ucx.cli" 2>&1 || rc=$?
wait_pid "$SERVER_PID" 30 || true
[ "$rc" = 0 ] && grep -q '^Final:' "$VFAB_TMP/ucx.cli" || { tail -20 "$VFAB_TMP/ucx.cli"; fail "ucx_perftest failed ($rc)"; }
grep -q 'mlx5_0:1 using gid_index 5$' "$VFAB_TMP/ucx.cli" || fail "UCX in node0 did not choose GID index 5"
grep -q 'mlx5_0:1 using gid_index 3$' "$VFAB_TMP/ucx.srv" || fail "UCX in node1 did not choose GID index 3"

note "(s) vfab addr node0 add 198.18.1.21/24 dev eth1: the hole is reused (2/3), nothing else moves"
"$VFAB" --fabric "$FS" addr node0 add 198.18.1.21/24 dev eth1 || fail "vfab addr add failed"
out=$(vx node0 bash -c "$ONELINER" | tr '\n' ' ')
[ "$out" = "3 5 7 " ] || fail "after the add node0's one-liner printed '$out', not '3 5 7'"
[ "$(vx node0 cat /sys/class/infiniband/mlx5_0/ports/1/gids/3)" = 0000:0000:0000:0000:0000:ffff:c612:0115 ] ||
	fail "gids/3 of node0 is not ::ffff:198.18.1.21"
"$VFAB" --fabric "$FS" down >/dev/null || fail "vfab down ($FS)"

# --- (6) IPv6 only ------------------------------------------------------------------
VFAB_FABRIC=$F6
note "(6) vfab up configs/gid-ipv6only.yaml as $F6"
"$VFAB" --fabric "$F6" up "$VFAB_REPO/configs/gid-ipv6only.yaml" >"$VFAB_TMP/up6.log" 2>&1 ||
	{ show "$VFAB_TMP/up6.log"; fail "vfab up gid-ipv6only.yaml failed"; }
out=$(vx node0 bash -c "$ONELINER" 2>/dev/null || true)
[ -z "$out" ] || fail "IPv6 only: the IPv4 one-liner printed '$out'"
idx=$(vx node0 bash -c "show_gids mlx5_0 | grep v2 | grep -v fe80: | cut -f 3")
[ "$idx" = 3 ] || fail "IPv6 only: the global RoCE v2 entry is '$idx', not 3"
pingpong_ok v6 node1 3 node0 3 18964
grep -q 'GID fd00:198:18:6::1$' "$VFAB_TMP/v6.cli" || fail "IPv6 only: node0 did not use fd00:198:18:6::1"
"$VFAB" --fabric "$F6" down >/dev/null || fail "vfab down ($F6)"

# --- (x) exclusive HCAs per pod -----------------------------------------------------
VFAB_FABRIC=$FX
note "(x) vfab up configs/k8s-exclusive.yaml as $FX"
"$VFAB" --fabric "$FX" up "$VFAB_REPO/configs/k8s-exclusive.yaml" >"$VFAB_TMP/upx.log" 2>&1 ||
	{ show "$VFAB_TMP/upx.log"; fail "vfab up k8s-exclusive.yaml failed"; }
for pod in pod-a:198.18.10.11 pod-b:198.18.10.12 pod-c:198.18.11.13 pod-d:198.18.11.14; do
	vx "${pod%%:*}" show_gids >"$VFAB_TMP/sgx"
	[ "$(tail -1 "$VFAB_TMP/sgx")" = n_gids_found=4 ] || { show "$VFAB_TMP/sgx"; fail "${pod%%:*}: not 4 GIDs"; }
	[ "$(grep -c "$(printf '\tnet1$')" "$VFAB_TMP/sgx")" = 4 ] || { show "$VFAB_TMP/sgx"; fail "${pod%%:*}: not all on net1"; }
	[ "$(vx "${pod%%:*}" bash -c "$ONELINER")" = 3 ] || fail "${pod%%:*}: the one-liner did not print 3"
	grep -q "$(printf '\t3\t.*\t%s  \tv2\tnet1' "${pod#*:}")" "$VFAB_TMP/sgx" ||
		{ show "$VFAB_TMP/sgx"; fail "${pod%%:*}: index 3 is not its own ${pod#*:}"; }
done
pingpong_ok excl pod-c 3 pod-a 3 18965
vx pod-a rdma system >"$VFAB_TMP/sysx" 2>&1 || { show "$VFAB_TMP/sysx"; fail "rdma system in pod-a"; }
grep -q '^netns exclusive ' "$VFAB_TMP/sysx" || { show "$VFAB_TMP/sysx"; fail "pod-a: rdma system does not say netns exclusive"; }
"$VFAB" --fabric "$FX" down >/dev/null || fail "vfab down ($FX)"

# --- (v) RoCE over a VLAN ----------------------------------------------------------
# A throwaway namespace says whether this kernel makes VLANs at all.
if unshare -n sh -c 'ip link add v0 type veth peer name v1 &&
	ip link add link v0 name v0.5 type vlan id 5' 2>/dev/null; then
	VFAB_FABRIC=$FV
	note "(v) vfab up configs/roce-vlan.yaml as $FV"
	"$VFAB" --fabric "$FV" up "$VFAB_REPO/configs/roce-vlan.yaml" >"$VFAB_TMP/upv.log" 2>&1 ||
		{ show "$VFAB_TMP/upv.log"; fail "vfab up roce-vlan.yaml failed"; }
	vx node0 ip -d link show eth1.100 | grep -q 'vlan protocol 802.1Q id 100' ||
		fail "node0 has no 802.1Q VLAN eth1.100"
	vx node0 show_gids >"$VFAB_TMP/sgv"
	show "$VFAB_TMP/sgv"
	[ "$(tail -1 "$VFAB_TMP/sgv")" = n_gids_found=6 ] || fail "VLAN: not 6 GIDs"
	[ "$(awk -F'\t' 'NR > 2 && NF > 3 { printf "%s:%s ", $3, $NF }' "$VFAB_TMP/sgv")" = \
		"0:eth1 1:eth1 2:eth1.100 3:eth1.100 4:eth1.100 5:eth1.100 " ] ||
		fail "VLAN: the entries' netdevs are not eth1 (0, 1) and eth1.100 (2..5)"
	grep -q "$(printf '\t3\t.*\t198.18.100.1  \tv2\teth1.100')" "$VFAB_TMP/sgv" ||
		fail "VLAN: index 3 is not 198.18.100.1 (v2, eth1.100)"
	[ "$(vx node0 bash -c "$ONELINER")" = 3 ] || fail "VLAN: the one-liner did not print 3"
	pingpong_ok vlan node1 3 node0 3 18967
	"$VFAB" --fabric "$FV" down >/dev/null || fail "vfab down ($FV)"
else
	note "(v) skipped: this kernel makes no 802.1Q VLANs (CONFIG_VLAN_8021Q)"
fi

for fab in "$FS" "$F6" "$FX" "$FV"; do
	[ ! -e "/run/vfab/$fab" ] && [ ! -e "/dev/shm/vfab-$fab" ] || fail "fabric $fab left files behind"
done
note "ok"
