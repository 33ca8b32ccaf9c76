#!/usr/bin/env bash
# NCCL's GID selection on the tables of README "Rehearse Kubernetes RDMA
# networking", on a GPU machine (all nodes share GPU 0, as run_gpu_e2e.sh):
# NCCL_IB_GID_INDEX fixed vs NCCL's own choice, steered by
# NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE and NCCL_IB_ROCE_VERSION_NUM.
#
# Usage (as root, from the repo root): tests/gpu/gid_selection.sh [--out DIR]
# Results: <out>/gid_summary.md and one log per run (default tests/gpu/results).
#
# Runs (expected on hardware; the summary records what happened):
#  configs/gid-sparse.yaml, after `vfab addr node0 del fd00:198:18:1::101/64
#  dev eth1` (node0: holes at 2/3, IPv4 v2 at 5 and 7; node1: 3):
#    sparse_auto       no GID setting: NCCL picks each node's IPv4 RoCE v2
#                      GID itself, holes and all (NCCL #1573/#1538 crashed here)
#    sparse_fixed3     NCCL_IB_GID_INDEX=3: node1's index, empty in node0: fails
#    sparse_v1         NCCL_IB_ROCE_VERSION_NUM=1: RoCE v1 across the spine: fails
#    sparse_range      NCCL_IB_ADDR_RANGE=198.18.0.0/15: works (both nodes match)
#    sparse_range11    NCCL_IB_ADDR_RANGE=198.18.1.11/32: node0 takes index 7,
#                      node1 has no match (NCCL falls back to its default)
#  configs/gid-ipv6only.yaml:
#    v6_auto           default NCCL_IB_ADDR_FAMILY=AF_INET: no IPv4 GID exists
#    v6_family         NCCL_IB_ADDR_FAMILY=AF_INET6: index 3 on both: works
#  configs/k8s-exclusive.yaml (4 pods, 2 hosts):
#    excl_auto         no GID setting: works
#    excl_fixed3       NCCL_IB_GID_INDEX=3, the same in every pod: works
#  configs/k8s-shared.yaml (5 pods on 2 hosts sharing each host's HCA:
#  host0 pods' own indices 3, 7, 11; host1's 3, 7):
#    shared_auto       no GID setting: works (NCCL may take another pod's
#                      entry of its host, which upstream Linux allows)
#    shared_fixed11    NCCL_IB_GID_INDEX=11 (pod-c's own): host1 has no 11: fails
#    shared_fixed3     NCCL_IB_GID_INDEX=3: every pod sends as its host's first
#                      pod: works upstream (MLNX_OFED would refuse it)
#  configs/roce-vlan.yaml (only where the kernel makes 802.1Q VLANs):
#    vlan_auto         no GID setting: NCCL picks index 3 (198.18.100.x on eth1.100)
#    vlan_tc           NCCL_IB_TC=106 (the traffic class a DSCP-26 lossless class
#                      uses): works (vfab does not shape by traffic class)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
out="$repo/tests/gpu/results"
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,36p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
summary="$out/gid_summary.md"
: >"$summary"

fabric=gpugid
. "$repo/tests/gpu/lib.sh"
cleanup() { "$vfab" --fabric "$fabric" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

# record NAME NNODES EXPECT ENV...: a short all_reduce run; EXPECT ok|fail.
fail=0
record()
{
	local name=$1 nn=$2 expect=$3 got=ok
	shift 3
	run_job "$name" "$nn" NCCL_IB_TIMEOUT=8 NCCL_IB_RETRY_CNT=1 "$@" -- --skip-sweep || got=fail
	say "- $name ($*): $got (expected $expect)"
	grep -E 'NET/IB ?: Using|GID|status=|ncclRemoteError|Got completion' "$out/$name.log" |
		sort -u | head -8 | sed 's/^/    /' >>"$summary" || true
	[ "$got" = "$expect" ] || fail=1
}

say "## configs/gid-sparse.yaml"
"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$repo/configs/gid-sparse.yaml"
"$vfab" --fabric "$fabric" addr node0 del fd00:198:18:1::101/64 dev eth1
"$vfab" --fabric "$fabric" exec node0 -- show_gids | tee -a "$summary"
record sparse_auto 2 ok
record sparse_fixed3 2 fail NCCL_IB_GID_INDEX=3
record sparse_v1 2 fail NCCL_IB_ROCE_VERSION_NUM=1
record sparse_range 2 ok NCCL_IB_ADDR_RANGE=198.18.0.0/15
record sparse_range11 2 ok NCCL_IB_ADDR_RANGE=198.18.1.11/32
"$vfab" --fabric "$fabric" down

say "## configs/gid-ipv6only.yaml"
"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$repo/configs/gid-ipv6only.yaml"
record v6_auto 2 ok
record v6_family 2 ok NCCL_IB_ADDR_FAMILY=AF_INET6
"$vfab" --fabric "$fabric" down

say "## configs/k8s-exclusive.yaml"
"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$repo/configs/k8s-exclusive.yaml"
record excl_auto 4 ok
record excl_fixed3 4 ok NCCL_IB_GID_INDEX=3
"$vfab" --fabric "$fabric" down

say "## configs/k8s-shared.yaml"
"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$repo/configs/k8s-shared.yaml"
"$vfab" --fabric "$fabric" exec pod-b -- show_gids | tee -a "$summary"
record shared_auto 5 ok
record shared_fixed11 5 fail NCCL_IB_GID_INDEX=11
record shared_fixed3 5 ok NCCL_IB_GID_INDEX=3
"$vfab" --fabric "$fabric" down

say "## configs/roce-vlan.yaml"
if unshare -n sh -c 'ip link add v0 type veth peer name v1 &&
	ip link add link v0 name v0.5 type vlan id 5' 2>/dev/null; then
	"$vfab" --fabric "$fabric" up "${libdir_args[@]}" "$repo/configs/roce-vlan.yaml"
	"$vfab" --fabric "$fabric" exec node0 -- show_gids | tee -a "$summary"
	record vlan_auto 2 ok
	record vlan_tc 2 ok NCCL_IB_TC=106
	"$vfab" --fabric "$fabric" down
else
	say "skipped: this kernel makes no 802.1Q VLANs"
fi

cat "$summary"
exit $fail
