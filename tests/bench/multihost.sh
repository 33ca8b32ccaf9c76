#!/usr/bin/env bash
# multihost.sh [--fabric NAME] [--json FILE] [--build DIR]
#
# RDMA between machines against RDMA within one and against the raw wire
# (issue 25), in one run. Two machines are two network namespaces joined by
# one veth (tests/integration/machines_lib.sh), each running its share of
# configs/two-hosts.yaml (fabrics NAME-a and NAME-b, default tbmh):
#   cross-host  a0 -> b1: RoCE v2 packets through both vfabds and eth1
#   in-host     a0 -> a1: the shared-memory path, one copy
#   raw         a0 -> b1 over the same nodes' netdevs, routers and eth1:
#               iperf3 UDP with 4096-byte datagrams (what a packet of path
#               MTU 4096 carries), received rate; ping's round trip / 2
# Metrics: ib_write_bw 1 MiB (-D 3, BW average) and ib_write_lat 8 B
# (t_typical, half a round trip), GID 3 on mlx5_0. Prints the table with
# the ratios, then the floors:
#   VFAB_BENCH_MH_BW_VS_UDP  cross-host write bw >= this x raw UDP   (0.05)
#   VFAB_BENCH_MH_LAT_VS_RAW cross-host write lat <= this x raw ping/2 (20)
# Exits 1 when a measurement fails or a floor is missed.
set -euo pipefail
export LC_ALL=C

. "$(dirname "$0")/bench_lib.sh"
bench_args tbmh "$@"
F=$fabric
. "$VFAB_REPO/tests/integration/machines_lib.sh"
min_bw=${VFAB_BENCH_MH_BW_VS_UDP:-0.05}
max_lat=${VFAB_BENCH_MH_LAT_VS_RAW:-20}

cleanup()
{
	machines_del
	vfab_cleanup
}
trap cleanup EXIT
machines_add
machines_up "$VFAB_REPO/configs/two-hosts.yaml"
perf=(-d mlx5_0 -x 3 -F)

# bw SERVER CLIENT: ib_write_bw 1 MiB for 3 s, Gb/s.
bw()
{
	between 18700 "$1" "$2" ib_write_bw "${perf[@]}" -s 1048576 -D 3
	awk "BEGIN { printf \"%.3f\", $(perftest_value "$VFAB_TMP/x.cli" 'BW average[MB/sec]' 4) * 8 / 1000 }"
}

# lat SERVER CLIENT: ib_write_lat 8 B t_typical, us.
lat()
{
	between 18701 "$1" "$2" ib_write_lat "${perf[@]}" -s 8 -n 5000
	perftest_value "$VFAB_TMP/x.cli" 't_typical[usec]' 5
}

note "cross-host a0 -> b1, in-host a0 -> a1: ib_write_bw 1 MiB, ib_write_lat 8 B"
x_bw=$(bw b1 a0)
i_bw=$(bw a1 a0)
x_lat=$(lat b1 a0)
i_lat=$(lat a1 a0)

note "raw: iperf3 UDP 4096-byte datagrams a0 -> b1, ping a0 -> b1"
on b1 iperf3 -s -1 -p 18702 >"$VFAB_TMP/iperf.srv" 2>&1 &
VFAB_SERVER_PIDS+=("$!")
for _ in $(seq 100); do
	on b1 ss -Hltn 'sport = :18702' 2>/dev/null | grep -q . && break
	sleep 0.1
done
on a0 iperf3 -c b1 -p 18702 -u -b 0 -l 4096 -t 3 --json >"$VFAB_TMP/iperf.json" ||
	fail "iperf3 a0 -> b1 failed"
u_bw=$(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]["sum"]
print("%.3f" % (e["bits_per_second"] * (1 - e["lost_percent"] / 100) / 1e9))' "$VFAB_TMP/iperf.json")
rtt=$(on a0 ping -c 41 -i 0.05 -n b1 | awk -F'time=' 'NF > 1 { split($2, t, " "); print t[1] * 1000 }' |
	sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f\n", v[int((NR + 1) / 2)] }')
u_lat=$(awk "BEGIN { printf \"%.2f\", $rtt / 2 }")

ratio() { awk "BEGIN { printf \"%.3f\", $1 / $2 }"; }
printf '%-28s %10s %10s %10s %10s %10s\n' metric cross-host in-host raw x-in x-raw
printf '%-28s %10.3f %10.3f %10.3f %10.3f %10.3f\n' "write bw 1 MiB [Gb/s]" "$x_bw" "$i_bw" \
	"$u_bw" "$(ratio "$x_bw" "$i_bw")" "$(ratio "$x_bw" "$u_bw")"
printf '%-28s %10.2f %10.2f %10.2f %10.3f %10.3f\n' "write lat 8 B [us]" "$x_lat" "$i_lat" \
	"$u_lat" "$(ratio "$x_lat" "$i_lat")" "$(ratio "$x_lat" "$u_lat")"
echo "raw: iperf3 -u -l 4096 received rate; ping a0 -> b1 round trip / 2 (median of 41)"
if [ -n "$json" ]; then
	printf '{"cross_bw_gbps":%s,"inhost_bw_gbps":%s,"udp_bw_gbps":%s,"cross_lat_us":%s,"inhost_lat_us":%s,"raw_lat_us":%s}\n' \
		"$x_bw" "$i_bw" "$u_bw" "$x_lat" "$i_lat" "$u_lat" >"$json"
fi
check "cross-host write bw $x_bw >= $min_bw x raw UDP $u_bw Gb/s" "$x_bw >= $min_bw * $u_bw"
check "cross-host write lat $x_lat <= $max_lat x raw $u_lat us" "$x_lat <= $max_lat * $u_lat"
exit "$failed"
