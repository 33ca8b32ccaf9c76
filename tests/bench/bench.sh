#!/usr/bin/env bash
# bench.sh [--fabric NAME] [--json FILE] [--build DIR]
#
# The vfab benchmark: brings up the default 2-node fabric (named NAME, default
# tbench), measures RDMA WRITE bandwidth (1 MiB, ib_write_bw) and 8-byte
# latency (ib_write_lat, t_typical) from node0 to node1 on mlx5_0 / GID 3, and
# puts them next to the raw ceiling of the copy vfab uses (pvm_ceiling:
# process_vm_writev between two processes) and to TCP between the same nodes
# over the fabric's veth/bridge path (tcp_stream), plus the time `vfab up` and
# `vfab down` take. Small messages: ib_write_bw -s 8 (one WR per post),
# ib_write_bw -s 8 --post_list 32, ib_send_bw -s 8 and ib_send_bw -s 8
# --post_list 32 next to the raw rate of
# 8-byte process_vm_writev calls, one write per call and 64 per call
# (pvm_ceiling). Datagrams: ib_send_bw -c UD -s 4096 next to RC
# ib_send_bw -s 4096 (bytes and messages per second). Copy engines: the fabric again, every node on all the CPUs
# this script may use, ib_write_bw 1, 4 and 16 MiB with 1, 2 and 4 engines
# (VFAB_COPY_ENGINES) next to the raw copy on one thread and split the same
# way over as many threads (pvm_ceiling --threads). Registration: ibv_reg_mr
# and ibv_dereg_mr of 4 KiB and 1 GiB next to mlock/munlock of the same pages
# (reg_cost; reported, no floor). Capture: ib_write_bw 64 KiB and ib_write_lat
# 8 B while vfab capture records node1's port, next to the same without
# (reported, no floor). Prints one table; with
# --json also writes the numbers.
#
# Exits 1 when a measurement fails or a floor is missed. Floors (environment):
#   VFAB_BENCH_BW_VS_RAW   vfab write bw >= this x raw pvm bw   (default 0.6)
#   VFAB_BENCH_BW_VS_TCP   vfab write bw >= this x TCP bw       (default 1.5)
#   VFAB_BENCH_MAX_LAT_US  vfab write latency <= this           (default 5)
#   VFAB_BENCH_MAX_UP_MS   vfab up < this                       (default 4000)
#   VFAB_BENCH_MAX_DOWN_MS vfab down < this                     (default 2000)
#   VFAB_BENCH_W8_VS_RAW1  ib_write_bw -s 8 rate >= this x raw one-per-call (0.5)
#   VFAB_BENCH_PL_VS_RAW1  the same with --post_list 32 >= this x it        (1.5)
#   VFAB_BENCH_S8_VS_RAW1  ib_send_bw -s 8 rate >= this x raw one-per-call  (1.2)
# Goals, reported but not enforced (issue 22): ib_send_bw -s 8 >= 2.5 x and
# its --post_list 32 >= 3 x raw one-per-call.
#   VFAB_BENCH_ENG_VS_RAWN 4 MiB with 2 engines >= this x raw 2 threads     (0.5)
#   VFAB_BENCH_UD_VS_RC    ib_send_bw -c UD -s 4096 >= this x RC's, MB/s    (0.5)
#   VFAB_BENCH_RL_VS_ROOT  without root (a test user's fabric, skipped where user
#                          namespaces are not allowed): ib_write_bw 1 MiB >= this x
#                          root's, ib_write_lat <= root's / this              (0.7)
# The fabric is always taken down on exit.
set -euo pipefail
export LC_ALL=C # numbers with a decimal point, whatever the locale

. "$(dirname "$0")/bench_lib.sh"
bench_args tbench "$@"

min_bw_raw=${VFAB_BENCH_BW_VS_RAW:-0.6}
# The raw copy itself is only 3-3.4x TCP over veth on the 2-core machines
# CI runs on, so a floor near 3 fails whenever the copy has a slow second.
min_bw_tcp=${VFAB_BENCH_BW_VS_TCP:-1.5}
max_lat=${VFAB_BENCH_MAX_LAT_US:-5}
max_up=${VFAB_BENCH_MAX_UP_MS:-4000}
max_down=${VFAB_BENCH_MAX_DOWN_MS:-2000}
min_w8_raw=${VFAB_BENCH_W8_VS_RAW1:-0.5}
min_pl_raw=${VFAB_BENCH_PL_VS_RAW1:-1.5}
min_s8_raw=${VFAB_BENCH_S8_VS_RAW1:-1.2}
min_eng_raw=${VFAB_BENCH_ENG_VS_RAWN:-0.5}
min_ud_rc=${VFAB_BENCH_UD_VS_RC:-0.5}
min_rl_root=${VFAB_BENCH_RL_VS_ROOT:-0.7}
eng_sizes="1 4 16" eng_counts="1 2 4"
for prog in pvm_ceiling tcp_stream; do
	[ -x "$VFAB_BIN/$prog" ] || fail "$VFAB_BIN/$prog missing (build the bench targets)"
done

fabric_is_up=0
bench_exit()
{
	if [ "$fabric_is_up" = 1 ]; then
		"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 ||
			echo "bench.sh: vfab down failed; fabric $VFAB_FABRIC may be left" >&2
	fi
	rootless_end "$VFAB_FABRIC"
	vfab_cleanup
}
trap bench_exit EXIT

ms_since()
{
	echo $((($(date +%s%N) - $1) / 1000000))
}

# key FILE KEY: value of a key=value line.
key()
{
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

bench_drop_stale

# The raw ceiling is read twice, before the fabric and after vfab's runs, and
# the bandwidth floor is checked against the lower: pvm_ceiling reports its
# best of 3 runs and vfab's ib_write_bw an average, and on a VM whose speed
# changes from minute to minute one reading alone went from 14.9 to 27.7 GB/s.
note "raw process_vm_writev ceiling, first reading (pvm_ceiling)"
"$VFAB_BIN/pvm_ceiling" >"$VFAB_TMP/pvm0.out" 2>&1 || { show "$VFAB_TMP/pvm0.out"; fail "pvm_ceiling failed"; }

note "vfab up (fabric $VFAB_FABRIC)"
t0=$(date +%s%N)
fabric_is_up=1
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up failed"; }
up_ms=$(ms_since "$t0")

note "ib_write_bw 1 MiB, 3 s"
pair_same write_bw 18551 ib_write_bw -d mlx5_0 -x 3 -s 1048576 -D 3 --report_gbits -F -p 18551
vfab_bw_gbit=$(perftest_value "$VFAB_TMP/write_bw.cli" 'BW average[Gb/sec]' 4)
num_between "${vfab_bw_gbit:-x}" 0 inf || { show "$VFAB_TMP/write_bw.cli"; fail "no ib_write_bw average"; }

note "ib_write_lat 8 B, 20000 iterations"
pair_same write_lat 18552 ib_write_lat -d mlx5_0 -x 3 -s 8 -n 20000 -F -p 18552
# ib_write_lat reports half the round trip already (as pvm_ceiling and tcp_stream do).
vfab_lat=$(perftest_value "$VFAB_TMP/write_lat.cli" 't_typical[usec]' 5)
num_between "${vfab_lat:-x}" 0 inf || { show "$VFAB_TMP/write_lat.cli"; fail "no ib_write_lat t_typical"; }

# Message rates [M/s] of 2 s perftest runs.
note "small messages: ib_write_bw -s 8, ib_send_bw -s 8, each also with --post_list 32"
pair_same w8 18554 ib_write_bw -d mlx5_0 -x 3 -s 8 -D 2 -F -p 18554
w8_rate=$(perftest_value "$VFAB_TMP/w8.cli" 'MsgRate[Mpps]' 5)
pair_same pl 18555 ib_write_bw -d mlx5_0 -x 3 -s 8 --post_list 32 -D 2 -F -p 18555
pl_rate=$(perftest_value "$VFAB_TMP/pl.cli" 'MsgRate[Mpps]' 5)
pair_same s8 18556 ib_send_bw -d mlx5_0 -x 3 -s 8 -D 2 -F -p 18556
s8_rate=$(perftest_value "$VFAB_TMP/s8.cli" 'MsgRate[Mpps]' 5)
pair_same spl 18559 ib_send_bw -d mlx5_0 -x 3 -s 8 --post_list 32 -D 2 -F -p 18559
spl_rate=$(perftest_value "$VFAB_TMP/spl.cli" 'MsgRate[Mpps]' 5)
for v in "$w8_rate" "$pl_rate" "$s8_rate" "$spl_rate"; do
	num_between "${v:-x}" 0 inf || fail "a small-message rate is missing ('$v')"
done

# Datagrams next to connected sends of the same size, 2 s each.
note "4 KiB sends: ib_send_bw -c UD and RC"
pair_same ud4k 18557 ib_send_bw -d mlx5_0 -x 3 -c UD -s 4096 -D 2 -F -p 18557
pair_same rc4k 18558 ib_send_bw -d mlx5_0 -x 3 -s 4096 -D 2 -F -p 18558
ud_bw=$(perftest_value "$VFAB_TMP/ud4k.cli" 'BW average[MB/sec]' 4)
ud_rate=$(perftest_value "$VFAB_TMP/ud4k.cli" 'MsgRate[Mpps]' 5)
rc4k_bw=$(perftest_value "$VFAB_TMP/rc4k.cli" 'BW average[MB/sec]' 4)
rc4k_rate=$(perftest_value "$VFAB_TMP/rc4k.cli" 'MsgRate[Mpps]' 5)
for v in "$ud_bw" "$ud_rate" "$rc4k_bw" "$rc4k_rate"; do
	num_between "${v:-x}" 0 inf || fail "a 4 KiB send rate is missing ('$v')"
done

# What a running capture costs the port it records (vfab capture on node1,
# frames cut at 128 bytes: headers only, as a tcpdump -s 128 would keep),
# next to the same runs without one; nothing is captured anywhere else.
note "capture: ib_write_bw 64 KiB and ib_write_lat 8 B with and without vfab capture on node1"
pair_same cap_off 18570 ib_write_bw -d mlx5_0 -x 3 -s 65536 -D 2 --report_gbits -F -p 18570
cap_off_bw=$(perftest_value "$VFAB_TMP/cap_off.cli" 'BW average[Gb/sec]' 4)
"$VFAB" --fabric "$VFAB_FABRIC" capture node1/mlx5_0 --snaplen 128 -w "$VFAB_TMP/bench.pcap" \
	>"$VFAB_TMP/capture.log" 2>&1 &
cap_pid=$!
VFAB_SERVER_PIDS+=("$cap_pid")
for _ in $(seq 50); do
	grep -q -- '->' "$VFAB_TMP/capture.log" && break
	sleep 0.1
done
grep -q -- '->' "$VFAB_TMP/capture.log" || { show "$VFAB_TMP/capture.log"; fail "vfab capture did not start"; }
pair_same cap_on 18571 ib_write_bw -d mlx5_0 -x 3 -s 65536 -D 2 --report_gbits -F -p 18571
cap_on_bw=$(perftest_value "$VFAB_TMP/cap_on.cli" 'BW average[Gb/sec]' 4)
pair_same cap_lat 18572 ib_write_lat -d mlx5_0 -x 3 -s 8 -n 20000 -F -p 18572
cap_lat=$(perftest_value "$VFAB_TMP/cap_lat.cli" 't_typical[usec]' 5)
kill -TERM "$cap_pid"
wait_pid "$cap_pid" 20 || { show "$VFAB_TMP/capture.log"; fail "vfab capture failed"; }
cap_frames=$(sed -n 's/^vfab capture: \([0-9]*\) frames.*/\1/p' "$VFAB_TMP/capture.log")
cap_drops=$(sed -n 's/.*; \([0-9]*\) dropped.*/\1/p' "$VFAB_TMP/capture.log")
for v in "$cap_off_bw" "$cap_on_bw" "$cap_lat" "$cap_frames"; do
	num_between "${v:-x}" 0 inf || { show "$VFAB_TMP/capture.log"; fail "a capture measurement is missing ('$v')"; }
done

# ibv_reg_mr/ibv_dereg_mr next to the kernel pinning the same pages (mlock).
note "memory registration: 4 KiB and 1 GiB (reg_cost)"
"$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$VFAB_BIN/reg_cost" -d mlx5_0 >"$VFAB_TMP/reg.out" 2>&1 ||
	{ show "$VFAB_TMP/reg.out"; fail "reg_cost failed"; }
for k in reg_4k dereg_4k reg_1g dereg_1g mlock_4k munlock_4k mlock_1g munlock_1g; do
	declare "$k=$(key "$VFAB_TMP/reg.out" "${k}_us")"
	num_between "${!k:-x}" 0 inf || { show "$VFAB_TMP/reg.out"; fail "no $k from reg_cost"; }
done

note "TCP over the fabric's veths (tcp_stream)"
pair_same tcp 18553 "$VFAB_BIN/tcp_stream" --port 18553
tcp_bw=$(key "$VFAB_TMP/tcp.cli" bw_gbyte_per_s)
tcp_lat=$(key "$VFAB_TMP/tcp.cli" lat_typical_us)

note "raw process_vm_writev ceiling (pvm_ceiling)"
"$VFAB_BIN/pvm_ceiling" >"$VFAB_TMP/pvm.out" 2>&1 || { show "$VFAB_TMP/pvm.out"; fail "pvm_ceiling failed"; }
raw_bw=$(key "$VFAB_TMP/pvm.out" bw_gbyte_per_s)
raw_bw0=$(key "$VFAB_TMP/pvm0.out" bw_gbyte_per_s)
num_between "${raw_bw0:-x}" 0 inf && raw_bw=$(lower "$raw_bw" "$raw_bw0")
raw_lat=$(key "$VFAB_TMP/pvm.out" lat_typical_us)
raw_one=$(key "$VFAB_TMP/pvm.out" small_one_mwrites_per_s)
raw_batch=$(key "$VFAB_TMP/pvm.out" small_batch_mwrites_per_s)

note "vfab down"
t0=$(date +%s%N)
"$VFAB" --fabric "$VFAB_FABRIC" down >"$VFAB_TMP/down.log" 2>&1 || { show "$VFAB_TMP/down.log"; fail "vfab down failed"; }
fabric_is_up=0
down_ms=$(ms_since "$t0")

# Copy engines need CPUs to run on: every node gets all of ours.
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
note "copy engines: the fabric again, every node on CPUs $cpus; ib_write_bw 2 s each"
sed "s/^\(  - id: node[01]\)$/\1\n    cpus: \"$cpus\"/" "$VFAB_REPO/configs/default.yaml" \
	>"$VFAB_TMP/engines.yaml"
grep -q "cpus: \"$cpus\"" "$VFAB_TMP/engines.yaml" || fail "could not derive the engines config"
fabric_is_up=1
"$VFAB" --fabric "$VFAB_FABRIC" up "$VFAB_TMP/engines.yaml" >"$VFAB_TMP/up2.log" 2>&1 ||
	{ show "$VFAB_TMP/up2.log"; fail "vfab up (engines config) failed"; }
declare -A eng_bw raw_mt
port=18560
for mib in $eng_sizes; do
	for n in $eng_counts; do
		pair_same "eng$mib.$n" "$port" env VFAB_COPY_ENGINES="$n" ib_write_bw -d mlx5_0 -x 3 \
			-s $((mib << 20)) -D 2 --report_gbits -F -p "$port"
		port=$((port + 1))
		v=$(perftest_value "$VFAB_TMP/eng$mib.$n.cli" 'BW average[Gb/sec]' 4)
		num_between "${v:-x}" 0 inf || { show "$VFAB_TMP/eng$mib.$n.cli"; fail "no ib_write_bw average"; }
		eng_bw[$mib.$n]=$(awk "BEGIN { printf \"%.2f\", $v / 8 }")
		"$VFAB_BIN/pvm_ceiling" --threads "$n" --size $((mib << 20)) --seconds 0.5 --runs 2 \
			>"$VFAB_TMP/pvm$mib.$n.out" 2>&1 || { show "$VFAB_TMP/pvm$mib.$n.out"; fail "pvm_ceiling --threads failed"; }
		raw_mt[$mib.$n]=$(key "$VFAB_TMP/pvm$mib.$n.out" bw_gbyte_per_s)
		num_between "${raw_mt[$mib.$n]:-x}" 0 inf || fail "no raw $n-thread ceiling"
	done
done
"$VFAB" --fabric "$VFAB_FABRIC" down >"$VFAB_TMP/down2.log" 2>&1 ||
	{ show "$VFAB_TMP/down2.log"; fail "vfab down (engines config) failed"; }
fabric_is_up=0

note "without root: ib_write_bw 1 MiB and ib_write_lat 8 B in a test user's fabric"
rl_bw=null rl_lat=null
if rootless_begin vf-bench-rl; then
	root_vfab=$VFAB VFAB=$RL_VFAB
	"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up-rl.log" 2>&1 ||
		{ show "$VFAB_TMP/up-rl.log"; fail "vfab up without root failed"; }
	# The better of two runs: root's figure is one run made minutes earlier,
	# and on a VM whose speed changes from minute to minute one run alone
	# read 0.60 x it here, the next 1.07 x.
	rl_bw=0
	for p in 18553 18550; do
		pair_same rl_bw "$p" ib_write_bw -d mlx5_0 -x 3 -s 1048576 -D 3 --report_gbits -F -p "$p"
		v=$(perftest_value "$VFAB_TMP/rl_bw.cli" 'BW average[Gb/sec]' 4)
		num_between "${v:-x}" 0 inf || { show "$VFAB_TMP/rl_bw.cli"; fail "no ib_write_bw average"; }
		rl_bw=$(awk "BEGIN { v = $v / 8; printf \"%.2f\", (v > $rl_bw ? v : $rl_bw) }")
	done
	pair_same rl_lat 18554 ib_write_lat -d mlx5_0 -x 3 -s 8 -n 20000 -F -p 18554
	rl_lat=$(perftest_value "$VFAB_TMP/rl_lat.cli" 't_typical[usec]' 5)
	num_between "${rl_lat:-x}" 0 inf || { show "$VFAB_TMP/rl_lat.cli"; fail "no ib_write_lat t_typical"; }
	VFAB=$root_vfab
fi
rootless_end "$VFAB_FABRIC"

for v in "$tcp_bw" "$tcp_lat" "$raw_bw" "$raw_lat" "$raw_one" "$raw_batch"; do
	num_between "$v" 0 inf || fail "a reference measurement is missing or not positive ('$v')"
done

calc()
{
	awk "BEGIN { printf \"%.2f\", $1 }"
}
vfab_bw=$(calc "$vfab_bw_gbit / 8")
echo
row()
{
	printf '%-26s %10.2f %10.2f %10.2f %10.2f %10.2f\n' "$1" "$2" "$3" "$4" \
		"$(calc "$2 / $3")" "$(calc "$2 / $4")"
}
printf '%-26s %10s %10s %10s %10s %10s\n' metric vfab "raw pvm" "TCP veth" vfab/raw vfab/TCP
row "write bw 1 MiB [GB/s]" "$vfab_bw" "$raw_bw" "$tcp_bw"
row "write lat 8 B [us]" "$vfab_lat" "$raw_lat" "$tcp_lat"
printf '%-26s %10s\n' "vfab up [ms]" "$up_ms" "vfab down [ms]" "$down_ms"
echo
if [ "$rl_bw" != null ]; then
	printf '%-26s %10s %10s %10s\n' "without root (same run)" root "no root" "x root"
	printf '%-26s %10.2f %10.2f %10.2f\n' "write bw 1 MiB [GB/s]" "$vfab_bw" "$rl_bw" \
		"$(calc "$rl_bw / $vfab_bw")"
	printf '%-26s %10.2f %10.2f %10.2f\n' "write lat 8 B [us]" "$vfab_lat" "$rl_lat" \
		"$(calc "$rl_lat / $vfab_lat")"
else
	printf '%-26s %10s\n' "without root" SKIPPED
fi
echo
srow()
{
	printf '%-34s %10.3f %10.2f %10.2f\n' "$1" "$2" "$(calc "$2 / $raw_one")" \
		"$(calc "$2 / $raw_batch")"
}
printf '%-34s %10s %10s %10s\n' "8 B messages [M/s]" rate "x raw 1" "x raw 64"
srow "raw pvm, 1 write per call" "$raw_one"
srow "raw pvm, 64 writes per call" "$raw_batch"
srow "ib_write_bw -s 8" "$w8_rate"
srow "ib_write_bw -s 8 --post_list 32" "$pl_rate"
srow "ib_send_bw -s 8" "$s8_rate"
srow "ib_send_bw -s 8 --post_list 32" "$spl_rate"
echo
printf '%-34s %10s %10s %10s\n' "4 KiB sends" "MB/s" "M/s" "x RC"
printf '%-34s %10.2f %10.4f %10.2f\n' "ib_send_bw -s 4096 (RC)" "$rc4k_bw" "$rc4k_rate" 1
printf '%-34s %10.2f %10.4f %10.2f\n' "ib_send_bw -c UD -s 4096" "$ud_bw" "$ud_rate" \
	"$(calc "$ud_bw / $rc4k_bw")"
echo
rrow()
{
	printf '%-34s %10.2f %10.2f %10.2f\n' "$1" "$2" "$3" "$(calc "$2 / $3")"
}
printf '%-34s %10s %10s %10s\n' "capture on node1 (snaplen 128)" "off" "on" "on/off"
printf '%-34s %10.2f %10.2f %10.2f\n' "ib_write_bw 64 KiB [GB/s]" "$(calc "$cap_off_bw / 8")" \
	"$(calc "$cap_on_bw / 8")" "$(calc "$cap_on_bw / $cap_off_bw")"
printf '%-34s %10.2f %10.2f %10.2f\n' "ib_write_lat 8 B [us]" "$vfab_lat" "$cap_lat" \
	"$(calc "$cap_lat / $vfab_lat")"
printf '%-34s %10s\n' "frames captured (dropped datagrams)" "$cap_frames ($cap_drops)"
echo
printf '%-34s %10s %10s %10s\n' "registration [us]" vfab "pin (mlock)" "x pin"
rrow "ibv_reg_mr 4 KiB" "$reg_4k" "$mlock_4k"
rrow "ibv_dereg_mr 4 KiB" "$dereg_4k" "$munlock_4k"
rrow "ibv_reg_mr 1 GiB" "$reg_1g" "$mlock_1g"
rrow "ibv_dereg_mr 1 GiB" "$dereg_1g" "$munlock_1g"
echo
printf '%-34s %10s %10s %10s %10s %10s\n' "copy engines, CPUs $cpus [GB/s]" vfab "raw 1 thr" \
	"raw N thr" "x raw 1" "x raw N"
for mib in $eng_sizes; do
	for n in $eng_counts; do
		printf '%-34s %10.2f %10.2f %10.2f %10.2f %10.2f\n' \
			"ib_write_bw $mib MiB, $n engine$([ "$n" = 1 ] || echo s)" "${eng_bw[$mib.$n]}" \
			"${raw_mt[$mib.1]}" "${raw_mt[$mib.$n]}" \
			"$(calc "${eng_bw[$mib.$n]} / ${raw_mt[$mib.1]}")" \
			"$(calc "${eng_bw[$mib.$n]} / ${raw_mt[$mib.$n]}")"
	done
done
echo

check "write bw $vfab_bw >= $min_bw_raw x raw $raw_bw GB/s" "$vfab_bw >= $min_bw_raw * $raw_bw"
check "write bw $vfab_bw >= $min_bw_tcp x TCP $tcp_bw GB/s" "$vfab_bw >= $min_bw_tcp * $tcp_bw"
check "write lat $vfab_lat <= $max_lat us" "$vfab_lat <= $max_lat"
check "ib_write_bw -s 8 $w8_rate >= $min_w8_raw x raw $raw_one M/s" "$w8_rate >= $min_w8_raw * $raw_one"
check "--post_list 32 $pl_rate >= $min_pl_raw x raw $raw_one M/s" "$pl_rate >= $min_pl_raw * $raw_one"
check "ib_send_bw -s 8 $s8_rate >= $min_s8_raw x raw $raw_one M/s" "$s8_rate >= $min_s8_raw * $raw_one"
check "UD 4 KiB $ud_bw >= $min_ud_rc x RC $rc4k_bw MB/s" "$ud_bw >= $min_ud_rc * $rc4k_bw"
check "4 MiB, 2 engines ${eng_bw[4.2]} >= $min_eng_raw x raw 2 threads ${raw_mt[4.2]} GB/s" \
	"${eng_bw[4.2]} >= $min_eng_raw * ${raw_mt[4.2]}"
check "vfab up $up_ms < $max_up ms" "$up_ms < $max_up"
check "vfab down $down_ms < $max_down ms" "$down_ms < $max_down"
if [ "$rl_bw" != null ]; then
	check "without root: write bw $rl_bw >= $min_rl_root x root's $vfab_bw GB/s" \
		"$rl_bw >= $min_rl_root * $vfab_bw"
	check "without root: write lat $rl_lat <= root's $vfab_lat / $min_rl_root us" \
		"$rl_lat * $min_rl_root <= $vfab_lat"
fi
goal "ib_send_bw -s 8 $s8_rate >= 2.5 x raw $raw_one M/s" "$s8_rate >= 2.5 * $raw_one"
goal "ib_send_bw -s 8 --post_list 32 $spl_rate >= 3 x raw $raw_one M/s" "$spl_rate >= 3 * $raw_one"

if [ -n "$json" ]; then
	cat >"$json" <<JSON
{
  "fabric": "$VFAB_FABRIC",
  "write_bw_1MiB_gbyte_per_s": {"vfab": $vfab_bw, "raw_pvm": $raw_bw, "tcp_veth": $tcp_bw},
  "write_lat_8B_us": {"vfab": $vfab_lat, "raw_pvm": $raw_lat, "tcp_veth": $tcp_lat},
  "small_8B_mmsg_per_s": {"raw_pvm_1": $raw_one, "raw_pvm_64": $raw_batch, "write_bw": $w8_rate,
                          "write_bw_post_list_32": $pl_rate, "send_bw": $s8_rate,
                          "send_bw_post_list_32": $spl_rate},
  "send_4KiB": {"rc_mbyte_per_s": $rc4k_bw, "rc_mmsg_per_s": $rc4k_rate,
                "ud_mbyte_per_s": $ud_bw, "ud_mmsg_per_s": $ud_rate},
  "capture": {"write_bw_64KiB_gbit_per_s_off": $cap_off_bw, "write_bw_64KiB_gbit_per_s_on": $cap_on_bw,
              "write_lat_8B_us_on": $cap_lat, "frames": $cap_frames, "dropped": ${cap_drops:-0}},
  "registration_us": {"reg_4KiB": $reg_4k, "dereg_4KiB": $dereg_4k, "reg_1GiB": $reg_1g,
                      "dereg_1GiB": $dereg_1g, "mlock_4KiB": $mlock_4k, "munlock_4KiB": $munlock_4k,
                      "mlock_1GiB": $mlock_1g, "munlock_1GiB": $munlock_1g},
  "copy_engines_gbyte_per_s": {$(for mib in $eng_sizes; do for n in $eng_counts; do
		printf '"%s MiB, %s": {"vfab": %s, "raw_1_thread": %s, "raw_n_threads": %s}, ' \
			"$mib" "$n" "${eng_bw[$mib.$n]}" "${raw_mt[$mib.1]}" "${raw_mt[$mib.$n]}"
	done; done | sed 's/, $//')},
  "without_root": {"write_bw_1MiB_gbyte_per_s": $rl_bw, "write_lat_8B_us": $rl_lat},
  "vfab_up_ms": $up_ms,
  "vfab_down_ms": $down_ms,
  "floors": {"bw_vs_raw": $min_bw_raw, "bw_vs_tcp": $min_bw_tcp, "max_lat_us": $max_lat,
             "max_up_ms": $max_up, "max_down_ms": $max_down,
             "write_8B_vs_raw_1": $min_w8_raw, "post_list_vs_raw_1": $min_pl_raw,
             "engines_4MiB_2_vs_raw_2_threads": $min_eng_raw, "ud_vs_rc_4KiB": $min_ud_rc,
             "without_root_vs_root": $min_rl_root},
  "pass": $([ "$failed" = 0 ] && echo true || echo false)
}
JSON
	note "numbers written to $json"
fi
exit "$failed"
