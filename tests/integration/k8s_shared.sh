#!/usr/bin/env bash
# Kubernetes pods sharing their host's HCA (configs/k8s-shared.yaml, README
# "Rehearse Kubernetes RDMA networking"), on fabric $VFAB_FABRIC_SHARED:
# host0 runs pod-a, pod-b, pod-c and host1 pod-d, pod-e, each host's pods on
# one mlx5_0 (RDMA shared device plugin, shared RDMA netns mode), each pod's
# net1 a macvlan of the host's PF ens1f0. Shows:
#  - show_gids in any pod lists every pod of its host (0/1 the PF's default
#    GID on ens1f0, then per pod its net1 address and link-local, all net1);
#  - the seed's one-liner prints every pod's index (11 3 7 on host0), not the
#    pod's own; `show_gids | grep v2 | grep <net1 address> | cut -f 3` does:
#    pod-a 3, pod-b 7, pod-c 11, pod-d 3, pod-e 7;
#  - one global index (11) works in pod-c and fails in pod-d, whose table
#    has no index 11 (the QP's RTR transition is refused, GID ::);
#  - each pod's own index works across hosts (ibv_rc_pingpong -g, ib_write_bw
#    -x) and between pods of one host (one HCA, QPs found by QPN);
#  - another pod's entry as the source GID works, as upstream Linux allows it
#    (MLNX_OFED refuses it: ENODEV at RTR);
#  - UCX with only UCX_NET_DEVICES=mlx5_0:1 picks a GID itself and works.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_lib.sh"

VFAB_FABRIC=${VFAB_FABRIC_SHARED:-tshk8s}
F=$VFAB_FABRIC

trap '"$VFAB" --fabric "$F" down >/dev/null 2>&1 || true; vfab_cleanup' EXIT
if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	"$VFAB" --fabric "$F" down || fail "could not take down the stale fabric $F"
fi


note "vfab up configs/k8s-shared.yaml as $F"
"$VFAB" --fabric "$F" up "$VFAB_REPO/configs/k8s-shared.yaml" >"$VFAB_TMP/up.log" 2>&1 ||
	{ show "$VFAB_TMP/up.log"; fail "vfab up k8s-shared.yaml failed"; }
grep -Eq '^  pod-c +eth0 .* mlx5_0 \(ens1f0, RoCE v2 IPv4 GID 11\)' "$VFAB_TMP/up.log" ||
	{ show "$VFAB_TMP/up.log"; fail "vfab up does not give pod-c's own index 11"; }

note "show_gids: every pod of a host sees every pod's entries"
vx pod-a show_gids >"$VFAB_TMP/sga" || fail "show_gids failed in pod-a"
show "$VFAB_TMP/sga"
[ "$(tail -1 "$VFAB_TMP/sga")" = n_gids_found=14 ] || fail "pod-a: not 14 GIDs (3 pods)"
[ "$(awk -F'\t' 'NR > 2 && NF > 3 { printf "%s:%s ", $3, $NF }' "$VFAB_TMP/sga")" = \
	"0:ens1f0 1:ens1f0 2:net1 3:net1 4:net1 5:net1 6:net1 7:net1 8:net1 9:net1 10:net1 11:net1 12:net1 13:net1 " ] ||
	fail "pod-a: not 0/1 on the PF ens1f0 and 2..13 on net1"
for e in 3:198.18.10.11 7:198.18.10.12 11:198.18.10.13; do
	grep -q "$(printf '\t%s\t.*\t%s  \tv2\tnet1' "${e%%:*}" "${e#*:}")" "$VFAB_TMP/sga" ||
		fail "pod-a: index ${e%%:*} is not ${e#*:} (v2, net1)"
done
cmp -s "$VFAB_TMP/sga" <(vx pod-c show_gids) || fail "pod-a and pod-c do not see one table"
vx pod-a rdma system 2>&1 | grep -q '^netns shared ' || fail "pod-a: rdma system does not say netns shared"
vx pod-d show_gids >"$VFAB_TMP/sgd"
[ "$(tail -1 "$VFAB_TMP/sgd")" = n_gids_found=10 ] || { show "$VFAB_TMP/sgd"; fail "pod-d: not 10 GIDs (2 pods)"; }
# pod-b's net1 link-local address (its macvlan's MAC) is the pair after its IPv4 one.
ll=$(vx pod-b ip -6 -o addr show dev net1 scope link | awk '{ print $4 }')
[ "$(vx pod-b cat /sys/class/infiniband/mlx5_0/ports/1/gids/9)" = \
	"$(python3 -c 'import ipaddress,sys; print(":".join("%04x" % int.from_bytes(ipaddress.ip_interface(sys.argv[1]).ip.packed[i:i+2], "big") for i in range(0, 16, 2)))' "$ll")" ] ||
	fail "gids/9 is not pod-b's net1 link-local address $ll"

note "the seed's one-liner prints every pod's index; the pod's own comes from its net1 address"
# The glob lists gids/* in lexicographic order: 11 before 3.
for h in pod-a:'11 3 7 ' pod-b:'11 3 7 ' pod-d:'3 7 '; do
	out=$(vx "${h%%:*}" bash -c "$ONELINER" | tr '\n' ' ')
	[ "$out" = "${h#*:}" ] || fail "${h%%:*}: the one-liner printed '$out', not '${h#*:}'"
done
for p in pod-a:198.18.10.11:3 pod-b:198.18.10.12:7 pod-c:198.18.10.13:11 pod-d:198.18.11.14:3 pod-e:198.18.11.15:7; do
	IFS=: read -r pod ip want <<<"$p"
	idx=$(vx "$pod" bash -c "show_gids | grep v2 | grep $ip | cut -f 3")
	[ "$idx" = "$want" ] || fail "$pod: show_gids | grep v2 | grep $ip | cut -f 3 printed '$idx', not $want"
done

note "one global index, 11: works in pod-c (its own) to pod-d (3), across the spine"
pingpong_ok g11 pod-d 3 pod-c 11 18971
grep -q 'GID ::ffff:198.18.10.13$' "$VFAB_TMP/g11.cli" || fail "pod-c did not use ::ffff:198.18.10.13"

note "the same index 11 in pod-d: its table has no index 11"
pingpong g11d pod-c 11 pod-d 11 18972
[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show "$VFAB_TMP/g11d.cli"; fail "-g 11 in pod-d exited $RC"; }
grep -q 'GID ::$' "$VFAB_TMP/g11d.cli" || { show "$VFAB_TMP/g11d.cli"; fail "-g 11 in pod-d did not read the zero GID"; }
grep -q 'Failed to modify QP to RTR' "$VFAB_TMP/g11d.cli" "$VFAB_TMP/g11d.srv" ||
	{ show "$VFAB_TMP/g11d.srv" "$VFAB_TMP/g11d.cli"; fail "-g 11 in pod-d failed, but not at the QP's RTR transition"; }

note "each pod's own index across hosts: pod-a 3 -> pod-e 7 (ibv_rc_pingpong), pod-b 7 -> pod-d 3 (ib_write_bw)"
pingpong_ok own pod-e 7 pod-a 3 18973
grep -q 'GID ::ffff:198.18.11.15$' "$VFAB_TMP/own.cli" || fail "pod-e's GID 7 is not ::ffff:198.18.11.15"
start_server pod-d "$VFAB_TMP/bw.srv" ib_write_bw -d mlx5_0 -x 3 -F -n 2000 -p 18974
wait_listen pod-d 18974 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server did not listen"; }
rc=0
timeout 90 "$VFAB" --fabric "$F" exec pod-b -- ib_write_bw -d mlx5_0 -x 7 -F -n 2000 -p 18974 \
	pod-d >"$VFAB_TMP/bw.cli" 2>&1 || rc=$?
src=0
wait_pid "$SERVER_PID" 30 || src=$?
[ "$rc" = 0 ] && [ "$src" = 0 ] || { show "$VFAB_TMP/bw.srv" "$VFAB_TMP/bw.cli"; fail "ib_write_bw: client $rc, server $src"; }
grep -A1 'local address:' "$VFAB_TMP/bw.cli" | grep -q 'GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:10:12' ||
	{ show "$VFAB_TMP/bw.cli"; fail "ib_write_bw -x 7 in pod-b did not use 198.18.10.12"; }

note "two pods of one host through their one HCA: pod-b 7 -> pod-c 11"
pingpong_ok local pod-c 11 pod-b 7 18975

note "another pod's entry (pod-a's 3) as pod-b's source GID: upstream allows it"
pingpong_ok other pod-d 3 pod-b 3 18976
grep -q 'local address: .* GID ::ffff:198.18.10.11$' "$VFAB_TMP/other.cli" ||
	{ show "$VFAB_TMP/other.cli"; fail "pod-b -g 3 did not send from ::ffff:198.18.10.11"; }

note "UCX picks the GID itself: ucx_perftest pod-b -> pod-e, only UCX_NET_DEVICES=mlx5_0:1"
ucx=(env UCX_NET_DEVICES=mlx5_0:1 UCX_LOG_LEVEL=debug)
start_server pod-e "$VFAB_TMP/ucx.srv" "${ucx[@]}" ucx_perftest -p 18977
wait_listen pod-e 18977 30 || { show "$VFAB_TMP/ucx.srv"; fail "ucx_perftest server did not listen"; }
rc=0
timeout 90 "$VFAB" --fabric "$F" exec pod-b -- "${ucx[@]}" ucx_perftest -p 18977 -t tag_bw -n 1000 \
	pod-e >"$VFAB_TMP/ucx.cli" 2>&1 || rc=$?
wait_pid "$SERVER_PID" 30 || true
[ "$rc" = 0 ] && grep -q '^Final:' "$VFAB_TMP/ucx.cli" || { tail -20 "$VFAB_TMP/ucx.cli"; fail "ucx_perftest failed ($rc)"; }
gb=$(grep -o 'mlx5_0:1 using gid_index [0-9]*$' "$VFAB_TMP/ucx.cli" | head -1 | awk '{ print $NF }')
ge=$(grep -o 'mlx5_0:1 using gid_index [0-9]*$' "$VFAB_TMP/ucx.srv" | head -1 | awk '{ print $NF }')
note "UCX chose gid_index ${gb:-?} in pod-b, ${ge:-?} in pod-e"
for g in "${gb:-x}" "${ge:-x}"; do
	case " 3 7 11 " in *" $g "*) ;; *) fail "UCX chose '$g', not a RoCE v2 IPv4 entry" ;; esac
done

"$VFAB" --fabric "$F" down >/dev/null || fail "vfab down ($F)"
[ ! -e "/run/vfab/$F" ] && [ ! -e "/dev/shm/vfab-$F" ] || fail "fabric $F left files behind"
note "ok"
