# shellcheck shell=bash
# Helpers of the shaping benchmark (sourced by shaping.sh after
# tests/integration/lib.sh): fabrics from generated configs, perftest-style
# server/client flows between nodes, numbers read back from the fabric
# report, and the verdict table.

SHAPING_FAILED=0   # set by print_table from the rows
SHAPING_RETRIES=1  # how many times with_retry measures a failed check again
SHAPING_UP=0
ROW_CHECK=() ROW_CONF=() ROW_MEAS=() ROW_RATIO=() ROW_MARGIN=() ROW_VERDICT=()
NOTES=()

# calc EXPR [DECIMALS]: floating point arithmetic (awk), 2 decimals by default.
calc()
{
	awk "BEGIN { printf \"%.${2:-2}f\", $1 }"
}

fmt()
{
	calc "$1" "${2:-2}"
}

# duration_gbps CLIENT_LOG SECS: the rate of an ib_write_bw -D SECS run from
# the messages it counted complete in its timed window: #iterations x #bytes
# x 8 / window. The window is SECS less perftest's default margin (SECS / 4
# whole seconds) at each end, timed by its alarm. perftest's own figure
# converts cycles to time with a CPU frequency it calibrates after the run,
# when its loop has stopped with up to tx_depth WRs still in flight; on a
# node of one CPU vfab's progress thread is then still copying those, and
# the calibration comes out wrong (2-33 % high here) or fails ("Correlation
# coefficient r^2 < 0.9", every rate printed as 0.00).
duration_gbps()
{
	local n bytes window=$(($2 - 2 * ($2 / 4)))
	n=$(perftest_value "$1" '#iterations' 2)
	bytes=$(perftest_value "$1" '#iterations' 1)
	is_num "${n:-x}" && is_num "${bytes:-x}" || return 0
	calc "$n * $bytes * 8 / ($window * 1e9)" 2
}

# row CHECK CONFIGURED MEASURED RATIO MARGIN VERDICT: one line of the table.
row()
{
	ROW_CHECK+=("$1") ROW_CONF+=("$2") ROW_MEAS+=("$3") ROW_RATIO+=("$4")
	ROW_MARGIN+=("$5") ROW_VERDICT+=("$6")
	printf '    %-50s %-16s %-20s %-7s %-20s %s\n' "$@"
}

# with_retry CHECK ARGS...: runs a check function; when one of its rows
# failed and tries remain, its rows and notes are dropped and it runs again.
# The rows of a check that needed more than one try are marked "[try N]".
with_retry()
{
	local mark=${#ROW_CHECK[@]} nmark=${#NOTES[@]} try=1 i failed
	while :; do
		"$@"
		failed=0
		for ((i = mark; i < ${#ROW_CHECK[@]}; i++)); do
			[ "${ROW_VERDICT[i]}" != FAIL ] || failed=1
		done
		if [ "$failed" = 0 ] || [ "$try" -gt "$SHAPING_RETRIES" ]; then
			break
		fi
		try=$((try + 1))
		note "$*: failed, measuring again (try $try)"
		ROW_CHECK=("${ROW_CHECK[@]:0:mark}") ROW_CONF=("${ROW_CONF[@]:0:mark}")
		ROW_MEAS=("${ROW_MEAS[@]:0:mark}") ROW_RATIO=("${ROW_RATIO[@]:0:mark}")
		ROW_MARGIN=("${ROW_MARGIN[@]:0:mark}") ROW_VERDICT=("${ROW_VERDICT[@]:0:mark}")
		NOTES=("${NOTES[@]:0:nmark}")
	done
	if [ "$try" -gt 1 ]; then
		for ((i = mark; i < ${#ROW_CHECK[@]}; i++)); do
			ROW_CHECK[i]="${ROW_CHECK[i]} [try $try]"
		done
	fi
}

note_add()
{
	NOTES+=("$*")
}

is_num()
{
	num_between "$1" -1 inf
}

# judge CHECK WANT GOT UNIT MARGIN PASS_IF: one row, PASS when the awk
# condition PASS_IF on w (WANT) and g (GOT) holds; MARGIN describes it.
judge()
{
	local check=$1 want=$2 got=$3 unit=$4 margin=$5 cond=$6 verdict=FAIL
	if ! is_num "$got"; then
		row "$check" "$(fmt "$want") $unit" "no result" "-" "$margin" FAIL
		return
	fi
	awk -v w="$want" -v g="$got" "BEGIN { exit !($cond) }" && verdict=PASS
	row "$check" "$(fmt "$want") $unit" "$(fmt "$got") $unit" "$(calc "$got / $want" 3)" \
		"$margin" "$verdict"
}

# judge_rel CHECK EXPECTED MEASURED TOL UNIT: within TOL (a fraction) of EXPECTED.
judge_rel()
{
	judge "$1" "$2" "$3" "$5" "+/-$(calc "$4 * 100" 0) %" "g / w - 1 <= $4 && 1 - g / w <= $4"
}

# judge_lat CHECK EXPECTED_US MEASURED_US: within 1 us + 5 % of the expected figure.
judge_lat()
{
	judge "$1" "$2" "$3" us "+/-$(calc "1 + 0.05 * $2") us" \
		"g - w <= 1 + 0.05 * w && w - g <= 1 + 0.05 * w"
}

# judge_at_most CHECK WANT GOT FACTOR UNIT: GOT must not exceed FACTOR x WANT.
judge_at_most()
{
	judge "$1" "$2" "$3" "$5" "< $4 x" "g <= $4 * w"
}

# gen_config NAME NODES RATE_GBPS LATENCY_US [LOSS [LEAF_SIZE OVERSUB SPINE_US]]:
# writes a fabric config into the temp dir and prints its path (RATE or
# LATENCY "-": none, the link is not shaped in that respect). Nodes get the
# default addresses (leaf L: 198.18.L.1, .2, ...).
gen_config()
{
	local name=$1 nodes=$2 rate=$3 lat=$4 loss=${5:-0} leaf_size=${6:-} oversub=${7:-1}
	local spine=${8:-0} f=$VFAB_TMP/$1.yaml i
	{
		echo "# shaping.sh: $name"
		echo "version: 1"
		echo "nodes:"
		for ((i = 0; i < nodes; i++)); do
			echo "  - {id: node$i}"
		done
		echo "fabric:"
		echo "  subnet: 198.18.0.0/24"
		echo "  mtu: 9000"
		[ -z "$leaf_size" ] || echo "  leaf_size: $leaf_size"
		[ -z "$leaf_size" ] || printf '  spine:\n    latency_us: %s\n' "$spine"
		echo "  inter_node:"
		echo "    type: roce"
		[ "$rate" = - ] || echo "    bandwidth_gbps: $rate"
		[ "$lat" = - ] || echo "    latency_us: $lat"
		echo "    oversubscription: $oversub"
		echo "    loss: $loss"
	} >"$f"
	echo "$f"
}

fabric_up()
{
	"$VFAB" --fabric "$VFAB_FABRIC" up "$1" >"$VFAB_TMP/up.log" 2>&1 ||
		{ show "$1" "$VFAB_TMP/up.log"; fail "vfab up $(basename "$1") failed"; }
	SHAPING_UP=1
	"$VFAB" --fabric "$VFAB_FABRIC" status --json >"$VFAB_TMP/status.json" ||
		fail "vfab status failed"
}

# Stops what this script started in the nodes, then the fabric.
fabric_down()
{
	local pid
	for pid in "${VFAB_SERVER_PIDS[@]}"; do
		kill_tree "$pid"
	done
	VFAB_SERVER_PIDS=()
	if [ "$SHAPING_UP" = 1 ]; then
		"$VFAB" --fabric "$VFAB_FABRIC" down >"$VFAB_TMP/down.log" 2>&1 ||
			{ show "$VFAB_TMP/down.log"; fail "vfab down failed"; }
		SHAPING_UP=0
	fi
}

shaping_take_down_stale()
{
	if [ -e "/run/vfab/$VFAB_FABRIC" ] || [ -e "/dev/shm/vfab-$VFAB_FABRIC" ]; then
		"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null ||
			fail "could not take down a stale $VFAB_FABRIC"
	fi
}

shaping_exit()
{
	fabric_down || echo "shaping.sh: fabric $VFAB_FABRIC may be left up" >&2
	vfab_cleanup
}

# node_ip NODE: its first eth0 IPv4 address, from `vfab status --json`.
node_ip()
{
	python3 -c '
import json, sys
for n in json.load(open(sys.argv[1]))["nodes"]:
    if n["id"] == sys.argv[2]:
        print(n["eth0"][0].split("/")[0])' "$VFAB_TMP/status.json" "$1"
}

report_to()
{
	"$VFAB" --fabric "$VFAB_FABRIC" report --json >"$1" || fail "vfab report --json failed"
}

# link_stat REPORT LINK FIELD: a field of one link of the report.
link_stat()
{
	python3 -c '
import json, sys
for l in json.load(open(sys.argv[1]))["links"]:
    if l["name"] == sys.argv[2]:
        print(l[sys.argv[3]])' "$@"
}

# port_stat REPORT NODE/HCA/PORT COUNTER: a port counter (sysfs name) in a REPORT.
port_stat()
{
	python3 -c '
import json, sys
node, hca, port = sys.argv[2].split("/")
for p in json.load(open(sys.argv[1]))["ports"]:
    if (p["node"], p["hca"], str(p["port"])) == (node, hca, port):
        print(p["counters"][sys.argv[3]])' "$@"
}

# path_oneway_us REPORT BYTES LINK...: when a message of BYTES sent into an
# idle path of these links arrives, as docs/LINK_MODEL.md books it (cut-through:
# the latencies add up, the slowest hop's serialization counts once).
path_oneway_us()
{
	python3 -c '
import json, sys
links = {l["name"]: l for l in json.load(open(sys.argv[1]))["links"]}
size, hops = int(sys.argv[2]), sys.argv[3:]
lat = sum(links[h]["latency_ns"] for h in hops)
ser = max(round(size * 8e9 / links[h]["rate_bps"]) if links[h]["rate_bps"] else 0 for h in hops)
print("%.4f" % ((lat + ser) / 1000))' "$@"
}

# hw_counter NODE NAME: an hw_counters file of mlx5_0 port 1 as the node sees it.
hw_counter()
{
	vx "$1" cat "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/$2"
}

# run_flows NAME PORT0 "SRV_NODE SRV_IP CLI_NODE"... -- CMD...: flow i runs CMD
# -p PORT0+i as a server in SRV_NODE and CMD -p PORT0+i SRV_IP as a client in
# CLI_NODE; the clients start together once every server listens. Logs in
# $VFAB_TMP/NAME.<i>.srv|cli. Fails (1, logs shown) when a side fails.
run_flows()
{
	local name=$1 port0=$2 specs=() i rc=0 srv_node srv_ip cli_node
	local srv_pids=() cli_pids=()
	shift 2
	while [ "$1" != -- ]; do
		specs+=("$1")
		shift
	done
	shift
	for i in "${!specs[@]}"; do
		read -r srv_node srv_ip cli_node <<<"${specs[$i]}"
		start_server "$srv_node" "$VFAB_TMP/$name.$i.srv" "$@" -p $((port0 + i))
		srv_pids+=("$SERVER_PID")
		if ! wait_listen "$srv_node" $((port0 + i)) 30; then
			show "$VFAB_TMP/$name.$i.srv"
			echo "$name: server $i did not listen on $((port0 + i))" >&2
			return 1
		fi
	done
	for i in "${!specs[@]}"; do
		read -r srv_node srv_ip cli_node <<<"${specs[$i]}"
		start_server "$cli_node" "$VFAB_TMP/$name.$i.cli" "$@" -p $((port0 + i)) "$srv_ip"
		cli_pids+=("$SERVER_PID")
	done
	for i in "${!specs[@]}"; do
		wait_pid "${cli_pids[$i]}" 120 || rc=1
		wait_pid "${srv_pids[$i]}" 30 || rc=1
	done
	if [ "$rc" != 0 ]; then
		for i in "${!specs[@]}"; do
			show "$VFAB_TMP/$name.$i.srv" "$VFAB_TMP/$name.$i.cli"
		done
		echo "$name: a server or client failed" >&2
	fi
	return $rc
}

print_table()
{
	local i w=50
	SHAPING_FAILED=0
	for i in "${!ROW_VERDICT[@]}"; do
		[ "${ROW_VERDICT[i]}" != FAIL ] || SHAPING_FAILED=1
	done
	echo
	printf '%-*s | %-16s | %-20s | %-7s | %-20s | %s\n' $w check configured measured ratio \
		margin verdict
	printf '%s\n' "$(printf '%*s' 135 '' | tr ' ' -)"
	for i in "${!ROW_CHECK[@]}"; do
		printf '%-*s | %-16s | %-20s | %-7s | %-20s | %s\n' $w "${ROW_CHECK[$i]}" \
			"${ROW_CONF[$i]}" "${ROW_MEAS[$i]}" "${ROW_RATIO[$i]}" "${ROW_MARGIN[$i]}" \
			"${ROW_VERDICT[$i]}"
	done
	echo
	for i in "${!NOTES[@]}"; do
		echo "note: ${NOTES[$i]}"
	done
	echo
	if [ "$SHAPING_FAILED" = 0 ]; then
		echo "shaping: no check failed"
	else
		echo "shaping: FAILED (see the rows marked FAIL)"
	fi
}

# json_num TEXT: the number TEXT starts with ("25.00 Gb/s" -> 25.00), else null.
json_num()
{
	local n=${1%% *}
	if is_num "$n"; then echo "$n"; else echo null; fi
}

# json_unit TEXT: what follows the number ("25.00 Gb/s" -> "Gb/s"), else "".
json_unit()
{
	if is_num "${1%% *}" && [ "${1#* }" != "$1" ]; then
		json_str "${1#* }"
	else
		json_str ""
	fi
}

json_str()
{
	local s=${1//\\/\\\\}
	printf '"%s"' "${s//\"/\\\"}"
}

# write_json FILE QUICK CEILING: the rows and notes as JSON (nothing without FILE).
write_json()
{
	local json=$1 quick=$2 ceiling=$3 i sep=""
	[ -n "$json" ] || return 0
	{
		printf '{\n  "fabric": %s,\n  "quick": %s,\n' "$(json_str "$VFAB_FABRIC")" \
			"$([ "$quick" = 1 ] && echo true || echo false)"
		printf '  "copy_ceiling_gbit_per_s": %s,\n  "rows": [\n' "$ceiling"
		for i in "${!ROW_CHECK[@]}"; do
			printf '%s    {"check": %s, "configured": %s, "measured": %s, ' "$sep" \
				"$(json_str "${ROW_CHECK[$i]}")" "$(json_str "${ROW_CONF[$i]}")" \
				"$(json_str "${ROW_MEAS[$i]}")"
			printf '"configured_value": %s, "measured_value": %s, "unit": %s, ' \
				"$(json_num "${ROW_CONF[$i]}")" "$(json_num "${ROW_MEAS[$i]}")" \
				"$(json_unit "${ROW_CONF[$i]}")"
			printf '"ratio": %s, "margin": %s, "verdict": %s}' "$(json_num "${ROW_RATIO[$i]}")" \
				"$(json_str "${ROW_MARGIN[$i]}")" "$(json_str "${ROW_VERDICT[$i]}")"
			sep=$',\n'
		done
		printf '\n  ],\n  "notes": ['
		sep=""
		for i in "${!NOTES[@]}"; do
			printf '%s\n    %s' "$sep" "$(json_str "${NOTES[$i]}")"
			sep=,
		done
		printf '\n  ],\n  "pass": %s\n}\n' "$([ "$SHAPING_FAILED" = 0 ] && echo true || echo false)"
	} >"$json"
	note "rows written to $json"
}
