#!/usr/bin/env bash
# Each HCA is a PCIe function in the node's /sys, as on a server with
# ConnectX NICs (docs/DESIGN.md "PCI view"), on configs/dgx-2x8.yaml and a
# fabric of its own: device links under /sys/devices/pci<DDDD>:00, the files
# NCCL and hwloc read, NCCL's bus-id resolution through /sys/class/pci_bus
# at every level, device/net/<netdev> and /sys/class/net/<netdev>/device on
# the same function, ibv_devices in name order, a live /sys/class/net, and
# verbs still working (ibv_devinfo, ib_write_bw between the nodes). Then the
# same config with `gpu:` placements: on a host without NVIDIA GPUs `up` says
# so and works; with GPUs, GPU and HCA share a PCIe switch. `down` leaves
# nothing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
CONFIG=$VFAB_REPO/configs/dgx-2x8.yaml
V() { "$VFAB" --fabric "$F" "$@"; }
BDF='[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]'

pci_cleanup()
{
	vfab_cleanup
	V down >/dev/null 2>&1 || true
}
trap pci_cleanup EXIT

if [ -e "/run/vfab/$F" ] || [ -e "/dev/shm/vfab-$F" ]; then
	note "a previous run left fabric $F behind; taking it down first"
	V down || fail "could not take down the stale fabric $F"
fi

note "vfab up $(basename "$CONFIG")"
V up "$CONFIG" >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

# The checks run inside a node as one script: what NCCL, hwloc and
# ibdev2netdev-style scripts read, and NCCL's walk up the tree
# (realpath of /sys/class/pci_bus/<DDDD:BB>/../../<BDF> at every level).
# Prints "<hca> <function path>" per HCA.
node_checks()
{
	V exec "$1" -- bash -c '
		BDF=$0
		set -e
		die() { echo "FAIL: $*"; exit 1; }
		for k in 0 1 2 3 4 5 6 7; do
			h=mlx5_$k n=eth$k
			d=$(realpath /sys/class/infiniband/$h/device)
			[[ $d =~ ^/sys/devices/pci[0-9a-f]{4}:00(/$BDF)+$ ]] || die "$h: device is $d"
			[ "$(cat $d/vendor)" = 0x15b3 ] || die "$h: vendor $(cat $d/vendor)"
			[ "$(cat $d/device)" = 0x101b ] || die "$h: device id $(cat $d/device)"
			[ "$(cat $d/class)" = 0x020000 ] || die "$h: class $(cat $d/class)"
			[ "$(realpath $d/subsystem)" = /sys/bus/pci ] || die "$h: subsystem"
			grep -q "GT/s PCIe" $d/max_link_speed || die "$h: max_link_speed"
			[ -n "$(cat $d/local_cpulist)" ] || die "$h: local_cpulist"
			grep -q "^hca " $d/vfab || die "$h: no locator"
			[ -r $d/net/$n/dev_port ] || die "$h: no device/net/$n"
			[ "$(realpath /sys/class/net/$n/device)" = "$d" ] ||
				die "$h: /sys/class/net/$n/device is $(realpath /sys/class/net/$n/device)"
			p=$d
			while [[ ${p##*/} =~ ^$BDF$ ]]; do
				b=${p##*/}
				[ "$(realpath /sys/class/pci_bus/${b%:*.*}/../../$b)" = "$p" ] ||
					die "$h: NCCL cannot resolve $b"
				[ "$(realpath /sys/bus/pci/devices/$b)" = "$p" ] || die "$h: bus/pci/devices/$b"
				p=${p%/*}
			done
			[[ ${p##*/} =~ ^pci[0-9a-f]{4}:00$ ]] || die "$h: walk ends at $p"
			echo "$h $d"
		done
		# /sys/class/net stays the kernel'"'"'s: a netdev made now appears.
		ip link add vfpci0 type veth peer name vfpci1
		[ -e /sys/class/net/vfpci0/address ] || die "a new netdev is missing in /sys/class/net"
		ip link del vfpci0
	' "$BDF"
}

for node in node0 node1; do
	note "$node: PCI functions, NCCL's resolution, netdev links"
	node_checks "$node" >"$VFAB_TMP/pci.$node" 2>&1 || { show "$VFAB_TMP/pci.$node"; fail "$node: PCI view"; }
	# As on a server: PCI order is name order (NCCL sorts its NICs by PCI path).
	sort -c -k2,2 "$VFAB_TMP/pci.$node" 2>/dev/null ||
		{ show "$VFAB_TMP/pci.$node"; fail "$node: PCI addresses are not in name order"; }
done

note "ibv_devices lists mlx5_0 .. mlx5_7 in order"
vx node0 ibv_devices >"$VFAB_TMP/devices" 2>&1 || { show "$VFAB_TMP/devices"; fail "ibv_devices"; }
order=$(awk '$1 ~ /^mlx5_/ { printf "%s ", $1 }' "$VFAB_TMP/devices")
[ "$order" = "mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7 " ] ||
	{ show "$VFAB_TMP/devices"; fail "ibv_devices order: $order"; }

note "ibv_devinfo sees the eight ports"
vx node1 ibv_devinfo >"$VFAB_TMP/devinfo" 2>&1 || { show "$VFAB_TMP/devinfo"; fail "ibv_devinfo"; }
[ "$(grep -c 'PORT_ACTIVE' "$VFAB_TMP/devinfo")" = 8 ] ||
	{ show "$VFAB_TMP/devinfo"; fail "ibv_devinfo: not 8 active ports"; }

if command -v lstopo-no-graphics >/dev/null; then
	note "hwloc puts each ConnectX under a PCI bridge"
	vx node0 lstopo-no-graphics >"$VFAB_TMP/lstopo" 2>&1 || { show "$VFAB_TMP/lstopo"; fail "lstopo"; }
	for k in 0 7; do
		grep -B2 "OpenFabrics \"mlx5_$k\"" "$VFAB_TMP/lstopo" | grep -q PCIBridge ||
			{ show "$VFAB_TMP/lstopo"; fail "lstopo: mlx5_$k is not under a PCI bridge"; }
	done
fi

note "ib_write_bw node0 -> node1 on mlx5_3 (rail 3)"
start_server node1 "$VFAB_TMP/bw.srv" ib_write_bw -d mlx5_3 -x 3 -p 18591 -n 2000
wait_listen node1 18591 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server did not listen"; }
timeout 60 "$VFAB" --fabric "$F" exec node0 -- ib_write_bw -d mlx5_3 -x 3 -p 18591 -n 2000 \
	198.18.3.2 >"$VFAB_TMP/bw.cli" 2>&1 || { show "$VFAB_TMP/bw.srv" "$VFAB_TMP/bw.cli"; fail "ib_write_bw client"; }
wait_pid "$SERVER_PID" 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server"; }
bw=$(perftest_value "$VFAB_TMP/bw.cli" "BW average" 4)
num_between "$bw" 0 inf || { show "$VFAB_TMP/bw.cli"; fail "ib_write_bw: no bandwidth"; }
note "ib_write_bw: $bw MB/s"
V down >/dev/null || fail "vfab down"

# --- gpu: placements ---------------------------------------------------------------
ngpus=0
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] && [[ $(cat "$d/class") == 0x03* ]] &&
		ngpus=$((ngpus + 1))
done
sed -e 's/^    hcas: 8$/    hcas:\n      - {name: mlx5_0, gpu: 0}\n      - {name: mlx5_1, gpu: 0}\n      - {name: mlx5_2}/' \
	"$CONFIG" >"$VFAB_TMP/gpu.yaml"
note "vfab up with gpu: 0 on a host with $ngpus NVIDIA GPU(s)"
V up "$VFAB_TMP/gpu.yaml" >"$VFAB_TMP/up-gpu.log" 2>&1 || { show "$VFAB_TMP/up-gpu.log"; fail "vfab up (gpu:)"; }
if [ "$ngpus" = 0 ]; then
	grep -q "gpu 0: the host has no such NVIDIA GPU" "$VFAB_TMP/up-gpu.log" ||
		{ show "$VFAB_TMP/up-gpu.log"; fail "vfab up did not say that GPU 0 is missing"; }
	vx node0 realpath /sys/class/infiniband/mlx5_1/device >"$VFAB_TMP/gpu.out" 2>&1
	grep -Eq "^/sys/devices/pci[0-9a-f]{4}:00/$BDF/$BDF$" "$VFAB_TMP/gpu.out" ||
		{ show "$VFAB_TMP/gpu.out"; fail "without a GPU mlx5_1 should sit below a root port"; }
else
	# GPU 0 in CUDA's order: the first NVIDIA display controller by address.
	gpu=$(for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x10de ] && [[ $(cat "$d/class") == 0x03* ]] && basename "$d"
	done | sort | head -1)
	vx node0 bash -c 'g=$(realpath /sys/class/pci_bus/${0%:*.*}/../../$0)
		n=$(realpath /sys/class/infiniband/mlx5_1/device)
		echo "$g"; echo "$n"; cat "$g/vendor"
		[ "${g%/*/*}" = "${n%/*/*}" ]' "$gpu" >"$VFAB_TMP/gpu.out" 2>&1 ||
		{ show "$VFAB_TMP/gpu.out"; fail "GPU $gpu and mlx5_1 do not share a switch"; }
	note "GPU $gpu and mlx5_1 below one switch: $(head -1 "$VFAB_TMP/gpu.out")"
fi
vx node0 ibv_devices >"$VFAB_TMP/devices-gpu" 2>&1 || { show "$VFAB_TMP/devices-gpu"; fail "ibv_devices (gpu:)"; }
[ "$(awk '$1 ~ /^mlx5_/ { printf "%s ", $1 }' "$VFAB_TMP/devices-gpu")" = "mlx5_0 mlx5_1 mlx5_2 " ] ||
	{ show "$VFAB_TMP/devices-gpu"; fail "ibv_devices order with gpu:"; }

note "down"
V down >/dev/null || fail "vfab down"
[ ! -e "/run/vfab/$F" ] || fail "run dir left"
[ ! -e "/dev/shm/vfab-$F" ] || fail "region left"
[ -z "$(ip netns list | grep "vfab-$F-" || true)" ] || fail "namespaces left"
! grep -F "/run/vfab/$F/" /proc/mounts >/dev/null || fail "mounts left"
note "ok"
