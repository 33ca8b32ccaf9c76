#!/usr/bin/env bash
# The launch of ../shared/seeds/emulate-multi-node-on-one-node.md, run inside
# a node: for every host of HOSTFILE ("name slots=N" lines: the fabric's
# /run/vfab/<fabric>/hostfile), `ssh -o PasswordAuthentication=no name`
# runs COMMAND with NODE_RANK (the host's line, from 0), NNODES, MASTER_ADDR
# (the first host's address) and MASTER_PORT set, every line of output
# prefixed "name: " as pdsh prints it. Exit 0 when every host's command did.
#
# Usage: seed_launch.sh HOSTFILE MASTER_PORT COMMAND...
set -uo pipefail
hostfile=$1 port=$2
shift 2
mapfile -t hosts < <(awk 'NF && $1 !~ /^#/ {print $1}' "$hostfile")
[ ${#hosts[@]} -gt 0 ] || { echo "no hosts in $hostfile" >&2; exit 2; }
master=$(getent hosts "${hosts[0]}" | awk '{print $1; exit}')
pids=()
for i in "${!hosts[@]}"; do
	h=${hosts[$i]}
	ssh -o PasswordAuthentication=no -o BatchMode=yes "$h" \
		"export NODE_RANK=$i NNODES=${#hosts[@]} MASTER_ADDR=$master MASTER_PORT=$port; $*" 2>&1 |
		sed -u "s/^/$h: /" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit $rc
