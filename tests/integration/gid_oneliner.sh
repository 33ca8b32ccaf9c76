#!/usr/bin/env bash
# The GID-index one-liner from the RoCE/NCCL bring-up guide
# (seeds/runai-multinode-roce-nccl.txt), verbatim but for the device name,
# finds the IPv4 RoCE v2 GID at index 3 inside both nodes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

oneliner=$(
	cat <<'ONELINER'
grep 'RoCE v2' $(grep '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/mlx5_0/ports/1/gids/* | cut -d ':' -f 1 | sed 's/gids/gid_attrs\/types/') | sed -e 's/.*\/\([0-9]*\):.*/\1/'
ONELINER
)

for node in node0 node1; do
	got=$(vx "$node" bash -c "$oneliner") || fail "$node: the one-liner failed"
	[ "$got" = 3 ] || fail "$node: the one-liner printed '$got', expected 3"
	gid=$(vx "$node" cat /sys/class/infiniband/mlx5_0/ports/1/gids/3)
	want=0000:0000:0000:0000:0000:ffff:c612:000$([ "$node" = node0 ] && echo 1 || echo 2)
	[ "$gid" = "$want" ] || fail "$node: gids/3 is '$gid', expected $want"
	type=$(vx "$node" cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3)
	[ "$type" = "RoCE v2" ] || fail "$node: gid_attrs/types/3 is '$type'"
	ndev=$(vx "$node" cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3)
	[ "$ndev" = eth0 ] || fail "$node: gid_attrs/ndevs/3 is '$ndev'"
done
note "one-liner prints 3 in both nodes; gids/3 = ::ffff:198.18.0.{1,2}"
