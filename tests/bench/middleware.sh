#!/usr/bin/env bash
# middleware.sh [--fabric NAME] [--json FILE] [--build DIR]
#
# What RDMA middleware gets out of vfab, next to what the verbs get and to the
# raw copy ceiling: on the default 2-node fabric (named NAME, default
# tbenchmw, brought up with --ssh for mpirun), from node0 to node1 on mlx5_0:
#   ib_write_bw 1 MiB, ib_write_lat 8 B (t_typical)        the verbs (perftest)
#   ib_send_lat 8 B (t_typical; both latencies the median of 3 interleaved runs)
#   ucx_perftest -t tag_lat 8 B (median one-way latency)    UCX's eager path
#   ucx_perftest -t ucp_put_bw 1 MiB                        UCX, only
#                                                           UCX_NET_DEVICES=mlx5_0:1
#   mpi_check: 1 MiB ping-pong bandwidth, 8 B latency       Open MPI 4.1,
#     (mpirun -np 2 --mca pml ucx -x UCX_NET_DEVICES=mlx5_0:1, no binding option)
#   pvm_ceiling                                             process_vm_writev
# Prints one table with the ratios to ib_write_* and to the raw ceiling; with
# --json also writes the numbers.
#
# Goals, reported but not enforced: UCX put >= 0.8 x ib_write_bw; Open MPI
# 8 B latency <= 2 x ib_write_lat (issue 9); ib_send_lat <= 1.05 x
# ib_write_lat, Open MPI 8 B <= 1.3 x and UCX tag_lat <= 1.2 x ib_send_lat
# (issue 22). Exits 1 when a measurement fails
# or a generous floor is missed (environment):
#   VFAB_BENCH_UCX_PUT_VS_WRITE  UCX put bw  >= this x ib_write_bw  (default 0.3)
#   VFAB_BENCH_MPI_BW_VS_WRITE   MPI 1 MiB bw >= this x ib_write_bw (default 0.3)
# (both against the raw copy's bandwidth instead where that reads lower)
#   VFAB_BENCH_MPI_LAT_VS_WRITE  MPI 8 B lat <= this x ib_write_lat (default 5)
# The fabric is always taken down on exit.
set -euo pipefail
export LC_ALL=C

. "$(dirname "$0")/bench_lib.sh"
bench_args tbenchmw "$@"

min_put=${VFAB_BENCH_UCX_PUT_VS_WRITE:-0.3}
min_mpi_bw=${VFAB_BENCH_MPI_BW_VS_WRITE:-0.3}
max_mpi_lat=${VFAB_BENCH_MPI_LAT_VS_WRITE:-5}
for prog in pvm_ceiling mpi_check; do
	[ -x "$VFAB_BIN/$prog" ] || fail "$VFAB_BIN/$prog missing (build the tests)"
done
command -v ucx_perftest >/dev/null || fail "ucx_perftest not found (apt-get install ucx-utils)"
command -v mpirun >/dev/null || fail "mpirun not found (apt-get install openmpi-bin)"

fabric_is_up=0
bench_exit()
{
	vfab_cleanup
	if [ "$fabric_is_up" = 1 ]; then
		"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 ||
			echo "middleware.sh: vfab down failed; fabric $VFAB_FABRIC may be left" >&2
	fi
}
trap bench_exit EXIT

key()
{
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

calc()
{
	awk "BEGIN { printf \"%.2f\", $1 }"
}

bench_drop_stale
note "vfab up --ssh (fabric $VFAB_FABRIC)"
fabric_is_up=1
"$VFAB" --fabric "$VFAB_FABRIC" up --ssh >"$VFAB_TMP/up.log" 2>&1 ||
	{ show "$VFAB_TMP/up.log"; fail "vfab up failed"; }

note "ib_write_bw 1 MiB, 3 s"
wb=(ib_write_bw -d mlx5_0 -x 3 -s 1048576 -D 3 --report_gbits -F -p 18581)
pair_same write_bw 18581 "${wb[@]}"
write_bw=$(perftest_value "$VFAB_TMP/write_bw.cli" 'BW average[Gb/sec]' 4)
num_between "${write_bw:-x}" 0 inf || { show "$VFAB_TMP/write_bw.cli"; fail "no ib_write_bw average"; }
write_bw=$(calc "$write_bw / 8")

# The two latencies whose ratio is a goal, in 3 interleaved rounds, each the
# median of its rounds: a single pair of runs on the 2-core VM drifts by
# 0.01-0.03 us from run to run, the size of the difference it measures.
note "ib_write_lat and ib_send_lat 8 B, 20000 iterations, 3 interleaved rounds"
wl=(ib_write_lat -d mlx5_0 -x 3 -s 8 -n 20000 -F -p 18582)
sl=(ib_send_lat -d mlx5_0 -x 3 -s 8 -n 20000 -F -p 18584)
write_lats=() send_lats=()
for round in 1 2 3; do
	pair_same write_lat 18582 "${wl[@]}"
	v=$(perftest_value "$VFAB_TMP/write_lat.cli" 't_typical[usec]' 5)
	num_between "${v:-x}" 0 inf || { show "$VFAB_TMP/write_lat.cli"; fail "no ib_write_lat t_typical"; }
	write_lats+=("$v")
	pair_same send_lat 18584 "${sl[@]}"
	v=$(perftest_value "$VFAB_TMP/send_lat.cli" 't_typical[usec]' 5)
	num_between "${v:-x}" 0 inf || { show "$VFAB_TMP/send_lat.cli"; fail "no ib_send_lat t_typical"; }
	send_lats+=("$v")
done
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
write_lat=$(median3 "${write_lats[@]}")
send_lat=$(median3 "${send_lats[@]}")
note "rounds: ib_write_lat ${write_lats[*]} us, ib_send_lat ${send_lats[*]} us"

note "ucx_perftest ucp_put_bw 1 MiB"
ucx=(env UCX_NET_DEVICES=mlx5_0:1 ucx_perftest)
pair ucx_put 18583 "${ucx[@]}" -p 18583 -- \
	"${ucx[@]}" node1 -p 18583 -t ucp_put_bw -s 1048576 -n 2000 -w 100
# Final: iterations, latency 50%ile/average/overall [us], bandwidth
# average/overall [MB/s, where UCX's MB is 2^20 bytes], message rate.
ucx_put=$(awk '$1 == "Final:" { print $7 }' "$VFAB_TMP/ucx_put.cli")
num_between "${ucx_put:-x}" 0 inf || { show "$VFAB_TMP/ucx_put.cli"; fail "no ucx_perftest Final bandwidth"; }
ucx_put=$(calc "$ucx_put * 1048576 / 1e9")

note "ucx_perftest ucp tag_lat 8 B"
pair ucx_tag 18585 "${ucx[@]}" -p 18585 -- \
	"${ucx[@]}" node1 -p 18585 -t tag_lat -s 8 -n 20000 -w 1000
# The 50th percentile of the one-way latency (half the round trip), as perftest's t_typical.
ucx_tag=$(awk '$1 == "Final:" { print $3 }' "$VFAB_TMP/ucx_tag.cli")
num_between "${ucx_tag:-x}" 0 inf || { show "$VFAB_TMP/ucx_tag.cli"; fail "no ucx_perftest Final latency"; }

note "Open MPI over UCX: mpi_check, -np 2"
timeout 300 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- mpirun --allow-run-as-root \
	--hostfile "/run/vfab/$VFAB_FABRIC/hostfile" -np 2 --mca pml ucx \
	-x UCX_NET_DEVICES=mlx5_0:1 "$VFAB_BIN/mpi_check" 10000 >"$VFAB_TMP/mpi.out" 2>&1 ||
	{ show "$VFAB_TMP/mpi.out"; fail "mpirun failed"; }
mpi_lat=$(key "$VFAB_TMP/mpi.out" lat_8B_us)
mpi_bw=$(key "$VFAB_TMP/mpi.out" bw_1MiB_mbyte_per_s)
num_between "${mpi_lat:-x}" 0 inf && num_between "${mpi_bw:-x}" 0 inf ||
	{ show "$VFAB_TMP/mpi.out"; fail "no mpi_check numbers"; }
mpi_bw=$(calc "$mpi_bw / 1000")

note "raw process_vm_writev ceiling (pvm_ceiling)"
"$VFAB_BIN/pvm_ceiling" >"$VFAB_TMP/pvm.out" 2>&1 || { show "$VFAB_TMP/pvm.out"; fail "pvm_ceiling failed"; }
raw_bw=$(key "$VFAB_TMP/pvm.out" bw_gbyte_per_s)
raw_lat=$(key "$VFAB_TMP/pvm.out" lat_typical_us)
for v in "$raw_bw" "$raw_lat"; do
	num_between "$v" 0 inf || fail "a raw ceiling measurement is missing or not positive ('$v')"
done

echo
row()
{
	printf '%-30s %10.2f %10.2f %10.2f %10.2f %10.2f\n' "$1" "$2" "$3" "$4" \
		"$(calc "$2 / $3")" "$(calc "$2 / $4")"
}
printf '%-30s %10s %10s %10s %10s %10s\n' metric value ib_write "raw pvm" "x ib_write" "x raw"
row "ib_write_bw 1 MiB [GB/s]" "$write_bw" "$write_bw" "$raw_bw"
row "UCX ucp_put_bw 1 MiB [GB/s]" "$ucx_put" "$write_bw" "$raw_bw"
row "MPI ping-pong 1 MiB [GB/s]" "$mpi_bw" "$write_bw" "$raw_bw"
row "ib_write_lat 8 B [us]" "$write_lat" "$write_lat" "$raw_lat"
row "MPI ping-pong 8 B [us]" "$mpi_lat" "$write_lat" "$raw_lat"
row "ib_send_lat 8 B [us]" "$send_lat" "$write_lat" "$raw_lat"
row "UCX tag_lat 8 B, median [us]" "$ucx_tag" "$write_lat" "$raw_lat"
echo

goal "UCX put $ucx_put >= 0.8 x ib_write_bw $write_bw GB/s" "$ucx_put >= 0.8 * $write_bw"
goal "MPI 8 B latency $mpi_lat <= 2 x ib_write_lat $write_lat us" "$mpi_lat <= 2 * $write_lat"
goal "ib_send_lat $send_lat <= 1.05 x ib_write_lat $write_lat us" "$send_lat <= 1.05 * $write_lat"
goal "MPI 8 B latency $mpi_lat <= 1.3 x ib_send_lat $send_lat us" "$mpi_lat <= 1.3 * $send_lat"
goal "UCX tag_lat $ucx_tag <= 1.2 x ib_send_lat $send_lat us" "$ucx_tag <= 1.2 * $send_lat"
# The bandwidth floors against the lower of the run's two 1 MiB ceilings (vfab's
# and the raw copy's), read minutes apart: on a VM whose speed changes from
# minute to minute, one alone can read above what the host sustains later.
bw_ref=$(lower "$write_bw" "$raw_bw")
check "UCX put $ucx_put >= $min_put x $bw_ref GB/s (the lower of ib_write_bw and raw)" \
	"$ucx_put >= $min_put * $bw_ref"
check "MPI 1 MiB $mpi_bw >= $min_mpi_bw x $bw_ref GB/s (the lower of ib_write_bw and raw)" \
	"$mpi_bw >= $min_mpi_bw * $bw_ref"
check "MPI 8 B latency $mpi_lat <= $max_mpi_lat x ib_write_lat $write_lat us" \
	"$mpi_lat <= $max_mpi_lat * $write_lat"

if [ -n "$json" ]; then
	cat >"$json" <<JSON
{
  "fabric": "$VFAB_FABRIC",
  "bw_1MiB_gbyte_per_s": {"ib_write_bw": $write_bw, "ucx_put": $ucx_put, "mpi_pingpong": $mpi_bw,
                          "raw_pvm": $raw_bw},
  "lat_8B_us": {"ib_write_lat": $write_lat, "mpi_pingpong": $mpi_lat, "raw_pvm": $raw_lat,
                "ib_send_lat": $send_lat, "ucx_tag_lat_median": $ucx_tag},
  "ratios": {"ucx_put_vs_write_bw": $(calc "$ucx_put / $write_bw"),
             "mpi_bw_vs_write_bw": $(calc "$mpi_bw / $write_bw"),
             "mpi_lat_vs_write_lat": $(calc "$mpi_lat / $write_lat"),
             "send_lat_vs_write_lat": $(calc "$send_lat / $write_lat"),
             "mpi_lat_vs_send_lat": $(calc "$mpi_lat / $send_lat"),
             "ucx_tag_lat_vs_send_lat": $(calc "$ucx_tag / $send_lat")},
  "goals": {"ucx_put_vs_write_bw": 0.8, "max_mpi_lat_vs_write_lat": 2,
            "max_send_lat_vs_write_lat": 1.05, "max_mpi_lat_vs_send_lat": 1.3,
            "max_ucx_tag_lat_vs_send_lat": 1.2},
  "floors": {"ucx_put_vs_write_bw": $min_put, "mpi_bw_vs_write_bw": $min_mpi_bw,
             "max_mpi_lat_vs_write_lat": $max_mpi_lat},
  "pass": $([ "$failed" = 0 ] && echo true || echo false)
}
JSON
	note "numbers written to $json"
fi
exit "$failed"
