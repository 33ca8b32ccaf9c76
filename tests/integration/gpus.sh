#!/usr/bin/env bash
# GPUs per node (nodes[].gpus; docs/DESIGN.md "Node sandbox", configs/README.md
# "GPUs"), with or without a GPU and without changing the host: everything
# runs in a private mount namespace (unshare -m).
#   0. on a host without NVIDIA GPUs: `vfab up` says so, the nodes keep the
#      host's /dev; then /dev is overlaid with fake nvidia0..3 and nvidiactl
#      (character devices 1:3) and /proc/driver with a fake driver directory
#      (nvidia/gpus/<bus id>/information, minors deliberately not in bus order);
#   1. two nodes with two GPUs each: node0 sees host GPUs 0,1, node1 2,3
#      (ls /dev/nvidia*, /proc/driver/nvidia/gpus), nvidiactl in both;
#      /dev/null, /dev/pts, the node's own /dev/shm and /dev/infiniband still
#      work (ibv_devinfo, ib_write_bw node0 -> node1); making another GPU's
#      device node fails, one's own works;
#   2. without the fake driver directory (the /dev/nvidia<N> fallback), three
#      nodes with two GPUs each and one without a list: the lists wrap
#      around (node2 gets 0,1 again, `vfab up` says so), node3 sees them all.
# On a host with real /dev/nvidia<N> the real GPUs are used instead of fakes.
# `vfab down` leaves nothing; the trap takes the fabric down inside the
# namespace on any failure.
set -euo pipefail

if [ -z "${VFAB_GPUS_FAKE:-}" ]; then
	# Mounts made from here on (the fakes, the fabric's) never reach the host.
	# The fakes' mount point stays busy until the namespace is gone: removed here.
	VFAB_GPUS_FAKE=$(mktemp -d /tmp/vfab-test-gpus-fake.XXXXXX)
	rc=0
	VFAB_GPUS_FAKE=$VFAB_GPUS_FAKE unshare -m --propagation private "$0" "$@" || rc=$?
	rm -rf "$VFAB_GPUS_FAKE"
	exit $rc
fi
. "$(dirname "$0")/lib.sh"
export LC_ALL=C # bus ids and names sort as bytes, as vfab sorts them

F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }

gpus_cleanup()
{
	V down >/dev/null 2>&1 || true
	vfab_cleanup
}
trap gpus_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	V down || fail "could not take down the stale fabric $F"
fi

# config FILE SPECS...: node<i> per spec, "N" -> gpus: N, "-" -> no gpus key.
config()
{
	local file=$1 i=0 spec
	shift
	echo "nodes:" >"$file"
	for spec in "$@"; do
		echo "  - id: node$i" >>"$file"
		[ "$spec" = - ] || echo "    gpus: $spec" >>"$file"
		i=$((i + 1))
	done
}

# dev_mounts [NODE]: how many mounts sit on /dev (on the host side of the test, or in NODE).
dev_mounts()
{
	if [ $# = 1 ]; then vx "$1" awk '$5 == "/dev"' /proc/self/mountinfo; else awk '$5 == "/dev"' /proc/self/mountinfo; fi | wc -l
}

# --- the host's GPUs, or fakes ----------------------------------------------------
config "$VFAB_TMP/two.yaml" 2 2
fake=0
if ! compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
	fake=1
	if ! compgen -G '/proc/driver/nvidia/gpus/*' >/dev/null; then
		note "0. no NVIDIA GPU: the lists only count ranks, /dev stays the host's"
		V up "$VFAB_TMP/two.yaml" >"$VFAB_TMP/up0.log" 2>&1 || { show "$VFAB_TMP/up0.log"; fail "vfab up (no GPU)"; }
		grep -q '^  gpus: the host has no NVIDIA GPU' "$VFAB_TMP/up0.log" ||
			{ show "$VFAB_TMP/up0.log"; fail "vfab up did not say that the host has no NVIDIA GPU"; }
		[ "$(dev_mounts node0)" = "$(dev_mounts)" ] || fail "node0 got a /dev of its own on a host without GPUs"
		V down >/dev/null || fail "vfab down"
	fi
	note "no /dev/nvidia<N> here: faking 4 GPUs in this test's mount namespace"
	mount -t tmpfs fake "$VFAB_GPUS_FAKE"
	mkdir "$VFAB_GPUS_FAKE/upper" "$VFAB_GPUS_FAKE/work" "$VFAB_GPUS_FAKE/dev" \
		"$VFAB_GPUS_FAKE/driver"
	for n in nvidia0 nvidia1 nvidia2 nvidia3 nvidiactl; do
		mknod "$VFAB_GPUS_FAKE/upper/$n" c 1 3
		chmod 666 "$VFAB_GPUS_FAKE/upper/$n"
	done
	mount -t overlay fake -o "lowerdir=/dev,upperdir=$VFAB_GPUS_FAKE/upper,workdir=$VFAB_GPUS_FAKE/work" \
		"$VFAB_GPUS_FAKE/dev"
	for m in pts shm mqueue hugepages; do
		if mountpoint -q "/dev/$m"; then mount --rbind "/dev/$m" "$VFAB_GPUS_FAKE/dev/$m"; fi
	done
	mount --move "$VFAB_GPUS_FAKE/dev" /dev
	# The driver's view: bus ids in PCI order, minors 0 1 3 2 (minors follow probe order).
	m=0
	for b in 0000:17:00.0 0000:3b:00.0 0000:86:00.0 0000:af:00.0; do
		mkdir -p "$VFAB_GPUS_FAKE/driver/nvidia/gpus/$b"
		printf 'Model: \t\t Fake GPU\nDevice Minor: \t %s\nBus Location: \t %s\n' \
			"$(echo 0 1 3 2 | cut -d' ' -f$((m + 1)))" "$b" >"$VFAB_GPUS_FAKE/driver/nvidia/gpus/$b/information"
		m=$((m + 1))
	done
	mount --bind "$VFAB_GPUS_FAKE/driver" /proc/driver
fi

# host_minors: the host's GPU minors in host GPU order (PCI order where the
# driver says, else minor order), as vfab numbers them.
host_minors()
{
	local d
	if [ -d /proc/driver/nvidia/gpus ] && compgen -G '/proc/driver/nvidia/gpus/*/information' >/dev/null; then
		for d in /proc/driver/nvidia/gpus/*/information; do
			sed -n 's/^Device Minor:[[:space:]]*\([0-9]*\).*/\1/p' "$d"
		done
	else
		for d in /dev/nvidia[0-9]*; do [ -c "$d" ] && echo "${d#/dev/nvidia}"; done | sort -n
	fi
}
# others: the nvidia* entries of /dev that are not GPUs (nvidiactl, nvidia-uvm, ...).
others=$(for d in /dev/nvidia*; do
	[ -e "$d" ] && [[ ! ${d#/dev/} =~ ^nvidia[0-9]+$ ]] && echo "${d#/dev/}"
done || true)

# plan SPECS...: per node "N" (a list of N GPUs) or "-" (none): prints
# "<node index> <minor> ..." per listed node, consecutive and wrapping, as the
# planner does (each GPU once per node).
plan()
{
	local -a minors
	local next=0 i=0 spec k h
	mapfile -t minors < <(host_minors)
	h=${#minors[@]}
	for spec in "$@"; do
		if [ "$spec" != - ]; then
			local got=()
			for ((k = 0; k < spec; k++)); do got+=("$next"); next=$(((next + 1) % h)); done
			echo "$i $(printf '%s\n' "${got[@]}" | sort -n -u | while read -r x; do echo "${minors[$x]}"; done | tr '\n' ' ')"
		fi
		i=$((i + 1))
	done
}

# expect_dev NODE MINOR...: the node's /dev/nvidia* are exactly these GPUs plus the others.
expect_dev()
{
	local node=$1 want got
	shift
	want=$( (printf 'nvidia%s\n' "$@"; printf '%s\n' $others) | grep . | sort | tr '\n' ' ')
	got=$(vx "$node" bash -c 'cd /dev && ls -d nvidia*' | sort | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "$node: /dev/nvidia* is '$got', want '$want'"
	note "$node: /dev: $got"
}

# expect_proc NODE MINOR...: /proc/driver/nvidia/gpus holds only those GPUs' entries.
expect_proc()
{
	local node=$1 want got
	shift
	[ -d /proc/driver/nvidia/gpus ] || return 0
	want=$(printf '%s\n' "$@" | sort -n | tr '\n' ' ')
	got=$(vx "$node" bash -c 'for d in /proc/driver/nvidia/gpus/*/information; do
		sed -n "s/^Device Minor:[[:space:]]*\([0-9]*\).*/\1/p" "$d"; done' | sort -n | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "$node: /proc/driver/nvidia/gpus has minors '$got', want '$want'"
	note "$node: /proc/driver/nvidia/gpus: minors $got"
}

ngpus=$(host_minors | wc -l)
[ "$ngpus" -gt 0 ] || fail "no GPU found, not even the fakes"
note "host GPU minors in host order: $(host_minors | tr '\n' ' ')(fake=$fake)"

# --- 1. two nodes, two GPUs each --------------------------------------------------
note "1. two nodes with gpus: 2 each"
V up "$VFAB_TMP/two.yaml" >"$VFAB_TMP/up1.log" 2>&1 || { show "$VFAB_TMP/up1.log"; fail "vfab up (2 x 2)"; }
grep -E '^  node[01] +gpus: host GPU' "$VFAB_TMP/up1.log" || { show "$VFAB_TMP/up1.log"; fail "vfab up did not print the nodes' GPUs"; }
if [ "$fake" = 1 ]; then
	grep -q '^  node1 *gpus: host GPU 2,3 (/dev/nvidia3 /dev/nvidia2)$' "$VFAB_TMP/up1.log" &&
		grep -q 'minors are not in that order' "$VFAB_TMP/up1.log" ||
		{ show "$VFAB_TMP/up1.log"; fail "vfab up: node1's GPUs or the minor order note"; }
fi
while read -r i minors; do
	expect_dev "node$i" $minors
	expect_proc "node$i" $minors
done < <(plan 2 2)

note "/dev/null, /dev/pts, /dev/shm and /dev/infiniband in node0"
vx node0 bash -c "set -e
	echo x >/dev/null
	[ -c /dev/pts/ptmx ] && [ -c /dev/infiniband/uverbs0 ]
	script -qc true /dev/null </dev/null >/dev/null # allocates a pty
	[ \"\$(ls /dev/shm | tr '\\n' ' ')\" = \"vfab-$F vfab-$F.users \" ] # the node's own: the region, its shards
	echo node0 >/dev/shm/gpus-test" >"$VFAB_TMP/dev.log" 2>&1 || { show "$VFAB_TMP/dev.log"; fail "node0's /dev"; }
[ -z "$(vx node1 ls /dev/shm/gpus-test 2>/dev/null)" ] && [ ! -e /dev/shm/gpus-test ] ||
	fail "node0's /dev/shm file is visible outside node0"

note "another GPU's device node cannot be made in node0; its own can"
mine=$(plan 2 2 | awk '$1 == 0 { print $2 }')
# A host GPU node0 does not have (none on a one- or two-GPU host).
theirs=$(host_minors | grep -vxF -f <(plan 2 2 | awk '$1 == 0 { for (i = 2; i <= NF; i++) print $i }') | head -1 || true)
if [ -n "$theirs" ]; then
	vx node0 bash -c "mknod /tmp/gpus-theirs c 195 $theirs" >"$VFAB_TMP/mknod.log" 2>&1 &&
		fail "node0 made /tmp/gpus-theirs (195:$theirs)"
	grep -q 'Operation not permitted' "$VFAB_TMP/mknod.log" ||
		{ show "$VFAB_TMP/mknod.log"; fail "mknod 195:$theirs: wrong error"; }
fi
vx node0 bash -c "mknod /tmp/gpus-mine c 195 $mine && rm /tmp/gpus-mine && mknod /tmp/gpus-null c 1 3 && rm /tmp/gpus-null" ||
	fail "node0 could not make its own GPU's node (195:$mine) or /dev/null's"

note "ibv_devinfo and ib_write_bw node0 -> node1"
vx node1 ibv_devinfo >"$VFAB_TMP/devinfo" 2>&1 && grep -q PORT_ACTIVE "$VFAB_TMP/devinfo" ||
	{ show "$VFAB_TMP/devinfo"; fail "ibv_devinfo in node1"; }
start_server node1 "$VFAB_TMP/bw.srv" ib_write_bw -d mlx5_0 -x 3 -p 18592 -n 2000
wait_listen node1 18592 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server did not listen"; }
timeout 60 "$VFAB" --fabric "$F" exec node0 -- ib_write_bw -d mlx5_0 -x 3 -p 18592 -n 2000 \
	"$NODE1_IP" >"$VFAB_TMP/bw.cli" 2>&1 || { show "$VFAB_TMP/bw.srv" "$VFAB_TMP/bw.cli"; fail "ib_write_bw client"; }
wait_pid "$SERVER_PID" 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server"; }
grep -q 'BW average' "$VFAB_TMP/bw.cli" || { show "$VFAB_TMP/bw.cli"; fail "ib_write_bw: no result"; }
V down >/dev/null || fail "vfab down"

# --- 2. wrap-around, and a node without a list --------------------------------------
if [ "$fake" = 1 ]; then
	umount /proc/driver # the /dev/nvidia<N> fallback, in minor order
	specs=(2 2 2 -)
else
	# The third node takes enough to go past the last GPU.
	specs=(2 2 $((ngpus > 5 ? ngpus - 3 : 2)) -)
fi
asked=$((specs[0] + specs[1] + specs[2]))
config "$VFAB_TMP/wrap.yaml" "${specs[@]}"
note "2. gpus: ${specs[*]} (- for none) on $ngpus GPUs"
V up "$VFAB_TMP/wrap.yaml" >"$VFAB_TMP/up2.log" 2>&1 || { show "$VFAB_TMP/up2.log"; fail "vfab up (${specs[*]})"; }
grep 'gpus: ' "$VFAB_TMP/up2.log"
if [ "$asked" -gt "$ngpus" ]; then
	grep -q "the nodes list $asked GPUs, the host has $ngpus: the lists wrap around" "$VFAB_TMP/up2.log" ||
		{ show "$VFAB_TMP/up2.log"; fail "vfab up did not say that the lists wrap around"; }
fi
grep -q '^  node3 *gpus: every host GPU (no gpus list)$' "$VFAB_TMP/up2.log" ||
	{ show "$VFAB_TMP/up2.log"; fail "vfab up: node3 should see every GPU"; }
while read -r i minors; do
	expect_dev "node$i" $minors
done < <(plan "${specs[@]}")
mapfile -t all < <(host_minors)
expect_dev node3 "${all[@]}"
[ "$(dev_mounts node3)" = "$(dev_mounts)" ] || fail "node3 (no gpus list) got a /dev of its own"
V down >/dev/null || fail "vfab down"

note "nothing left behind"
[ ! -e "/run/vfab/$F" ] && [ ! -e "/dev/shm/vfab-$F" ] || fail "fabric files left"
! compgen -G "/run/netns/vfab-$F-*" >/dev/null || fail "namespace files left"
! grep -q "/run/vfab/$F" /proc/self/mountinfo || fail "mounts of $F left"
[ "$fake" = 0 ] || [ -c /dev/nvidia3 ] || fail "the (fake) host /dev lost nvidia3"
note "GPUs per node: PASS"
