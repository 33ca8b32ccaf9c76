#!/usr/bin/env bash
# Runtime control, faults and observability on a fabric of its own (default
# 2-node config, fabric name $VFAB_FABRIC, "tops" from ops.cmake), with
# unmodified tools inside the nodes:
#   link down/up  ibv_devinfo says PORT_DOWN/PORT_ACTIVE, sysfs state and
#                 phys_state follow, ibv_asyncwatch sees PORT_ERR/PORT_ACTIVE
#   shape         sysfs rate changes; ib_write_bw runs under the new rate
#   down in use   a port taken down under ib_write_bw: RETRY_EXC_ERR
#   counters      port_xmit_data/port_rcv_data grow within 1 s of traffic
#   fault pause   the node's processes are stopped (state T), then resumed
#   fault kill    they are gone, the node itself still works
#   stats/report  vfab stats --json and vfab report --json parse, and the
#                 report holds the traffic and every change made above
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ops_cleanup()
{
	vfab_cleanup
	"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
}
trap ops_cleanup EXIT

port_dir=/sys/class/infiniband/mlx5_0/ports/1
bw_port=18561

sysfs() # NODE FILE: a file of node's port 1 of mlx5_0
{
	vx "$1" cat "$port_dir/$2"
}

# node_pids NODE: the node's processes, less its holder and sshd.
node_pids()
{
	local holder pid
	holder=$(cat "/run/vfab/$VFAB_FABRIC/nodes/$1/holder.pid")
	for pid in $(ip netns pids "vfab-$VFAB_FABRIC-$1"); do
		[ "$pid" != "$holder" ] || continue
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != sshd ] || continue
		echo "$pid"
	done
}

proc_state() # PID: the state letter of /proc/PID/stat ("" when gone)
{
	sed -n 's/.*) \([A-Z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null || true
}

if [ -e "/run/vfab/$VFAB_FABRIC" ] || [ -e "/dev/shm/vfab-$VFAB_FABRIC" ]; then
	note "a previous run left fabric $VFAB_FABRIC behind; taking it down first"
	"$VFAB" --fabric "$VFAB_FABRIC" down
fi
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up"; }

# --- usage errors are exit 2, a fabric without vfabd exit 1
rc=0; "$VFAB" --fabric "$VFAB_FABRIC" link node0/mlx5_0 sideways 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "link with a bad direction exited $rc, not 2"
rc=0; "$VFAB" --fabric "$VFAB_FABRIC" link node9/mlx5_0 down 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "link on an unknown node exited $rc, not 2"
rc=0; "$VFAB" --fabric "$VFAB_FABRIC-none" report 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "report of a fabric that is not up exited $rc, not 1"

# --- link down / up, seen by the unmodified tools of node0
start_asyncwatch node0 "$VFAB_TMP/asyncwatch.log"
watch_pid=$SERVER_PID

"$VFAB" --fabric "$VFAB_FABRIC" link node0/mlx5_0 down || fail "vfab link down exited $?"
vx node0 ibv_devinfo -d mlx5_0 >"$VFAB_TMP/devinfo.down" 2>&1 || { show "$VFAB_TMP/devinfo.down"; fail "ibv_devinfo"; }
grep -Eq $'^\t+state:\t+PORT_DOWN \\(1\\)$' "$VFAB_TMP/devinfo.down" ||
	{ show "$VFAB_TMP/devinfo.down"; fail "ibv_devinfo does not show PORT_DOWN after link down"; }
[ "$(sysfs node0 state)" = "1: DOWN" ] || fail "sysfs state is '$(sysfs node0 state)', not '1: DOWN'"
[ "$(sysfs node0 phys_state)" = "3: Disabled" ] || fail "sysfs phys_state is not '3: Disabled'"
[ "$(sysfs node1 state)" = "4: ACTIVE" ] || fail "node1's port changed with node0's"
note "link down: ibv_devinfo PORT_DOWN, sysfs 1: DOWN / 3: Disabled"

"$VFAB" --fabric "$VFAB_FABRIC" link node0/mlx5_0/1 up || fail "vfab link up exited $?"
vx node0 ibv_devinfo -d mlx5_0 >"$VFAB_TMP/devinfo.up" 2>&1 || fail "ibv_devinfo after up"
grep -Eq $'^\t+state:\t+PORT_ACTIVE \\(4\\)$' "$VFAB_TMP/devinfo.up" ||
	{ show "$VFAB_TMP/devinfo.up"; fail "ibv_devinfo does not show PORT_ACTIVE after link up"; }
[ "$(sysfs node0 state)" = "4: ACTIVE" ] || fail "sysfs state is not '4: ACTIVE' after up"
[ "$(sysfs node0 phys_state)" = "5: LinkUp" ] || fail "sysfs phys_state is not '5: LinkUp' after up"
[ "$(sysfs node0 counters/link_downed)" = 1 ] || sleep 0.5
[ "$(sysfs node0 counters/link_downed)" = 1 ] || fail "counters/link_downed is not 1"
note "link up: PORT_ACTIVE, sysfs 4: ACTIVE / 5: LinkUp, link_downed 1"

# --- shape: the port reports the new rate, traffic runs under it
"$VFAB" --fabric "$VFAB_FABRIC" shape node0/mlx5_0 bw=25 lat=2 || fail "vfab shape exited $?"
[ "$(sysfs node0 rate)" = "25 Gb/sec (1X EDR)" ] || fail "sysfs rate is '$(sysfs node0 rate)' after shape bw=25"
rc=0; "$VFAB" --fabric "$VFAB_FABRIC" shape node0/mlx5_0 speed=3 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "shape with an unknown key exited $rc, not 2"
note "shape bw=25: sysfs rate '25 Gb/sec (1X EDR)'"

# --- traffic: counters grow within a second
xmit0=$(sysfs node0 counters/port_xmit_data)
rcv0=$(sysfs node1 counters/port_rcv_data)
srv=$VFAB_TMP/bw_server.log cli=$VFAB_TMP/bw_client.log
size=65536 iters=2000
start_server node1 "$srv" ib_write_bw -d mlx5_0 -x 3 -F -p "$bw_port" -s "$size" -n "$iters"
wait_listen node1 "$bw_port" 30 || { show "$srv"; fail "ib_write_bw server did not listen"; }
rc=0
timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- ib_write_bw -d mlx5_0 -x 3 -F \
	-p "$bw_port" -s "$size" -n "$iters" "$NODE1_IP" >"$cli" 2>&1 || rc=$?
wait_pid "$SERVER_PID" 30 || true
[ "$rc" = 0 ] || { show "$srv" "$cli"; fail "ib_write_bw client exited $rc"; }
done_ms=$(date +%s%3N)
want=$((size * iters / 4))
while :; do
	xmit=$(sysfs node0 counters/port_xmit_data)
	rcv=$(sysfs node1 counters/port_rcv_data)
	[ $((xmit - xmit0)) -ge "$want" ] && [ $((rcv - rcv0)) -ge "$want" ] && break
	[ $(($(date +%s%3N) - done_ms)) -lt 1000 ] ||
		fail "within 1 s port_xmit_data grew by $((xmit - xmit0)), port_rcv_data by $((rcv - rcv0)) words, want >= $want"
	sleep 0.05
done
bw=$(perftest_value "$cli" 'BW average[MB/sec]' 4)
# 25 Gb/s is 3125 MB/s of payload: the shaped port must hold the run below it (+10 %).
num_between "${bw:-x}" 0 3440 || { show "$cli"; fail "ib_write_bw average ${bw:-none} MB/sec on a 25 Gb/s port"; }
note "ib_write_bw ${bw} MB/sec at 25 Gb/s; port_xmit_data +$((xmit - xmit0)), port_rcv_data +$((rcv - rcv0)) words"
"$VFAB" --fabric "$VFAB_FABRIC" shape node0/mlx5_0 bw=0 lat=0 >/dev/null || fail "unshape"

# --- a port going down under traffic: the sender's WRs end in RETRY_EXC_ERR
srv=$VFAB_TMP/down_server.log cli=$VFAB_TMP/down_client.log
start_server node1 "$srv" ib_write_bw -d mlx5_0 -x 3 -F -p "$((bw_port + 1))" -D 8
down_srv=$SERVER_PID
wait_listen node1 "$((bw_port + 1))" 30 || { show "$srv"; fail "ib_write_bw server did not listen"; }
"$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- ib_write_bw -d mlx5_0 -x 3 -F -p "$((bw_port + 1))" \
	-D 8 "$NODE1_IP" >"$cli" 2>&1 &
down_cli=$!
VFAB_SERVER_PIDS+=("$down_cli")
# Down once the traffic flows (port_xmit_data grows): perftest's own output
# is block-buffered into the log and says nothing before it exits.
xmit0=$(sysfs node0 counters/port_xmit_data)
for _ in $(seq 100); do
	[ "$(sysfs node0 counters/port_xmit_data)" -gt "$xmit0" ] && break
	sleep 0.1
done
"$VFAB" --fabric "$VFAB_FABRIC" link node1/mlx5_0 down >/dev/null || fail "link node1 down"
rc=0
wait_pid "$down_cli" 10 || rc=$?
wait_pid "$down_srv" 10 || true
"$VFAB" --fabric "$VFAB_FABRIC" link node1/mlx5_0 up >/dev/null || fail "link node1 up"
[ "$rc" != 0 ] && [ "$rc" != 124 ] || { show "$cli"; fail "ib_write_bw exited $rc with the peer's port down"; }
# 12 = IBV_WC_RETRY_EXC_ERR: no answer from the port, as on hardware.
grep -q 'Failed status 12:' "$cli" || { show "$cli"; fail "no RETRY_EXC_ERR completion with the peer's port down"; }
note "node1 port down under ib_write_bw: the client failed with status 12 (RETRY_EXC_ERR)"

# --- stats: one JSON table, and the text table
"$VFAB" --fabric "$VFAB_FABRIC" stats --interval 0.2 --count 1 --json >"$VFAB_TMP/stats.json" ||
	fail "vfab stats --json exited $?"
python3 - "$VFAB_TMP/stats.json" <<'PY' || fail "vfab stats --json is not what it should be"
import json, sys
doc = json.loads(open(sys.argv[1]).read())
names = {l["name"] for l in doc["links"]}
assert {"node0/mlx5_0/1/up", "node1/mlx5_0/1/down", "node0/loopback"} <= names, names
assert all(l["bps"] == 0 for l in doc["links"]), "traffic on an idle fabric"
PY
"$VFAB" --fabric "$VFAB_FABRIC" stats --interval 0.2 --count 2 >"$VFAB_TMP/stats.txt" || fail "vfab stats exited $?"
[ "$(grep -c '^node0/mlx5_0/1/up ' "$VFAB_TMP/stats.txt")" = 2 ] || { show "$VFAB_TMP/stats.txt"; fail "vfab stats printed no 2 tables"; }

# --- a latency spike, ended by vfabd's timer
"$VFAB" --fabric "$VFAB_FABRIC" fault spike node1/mlx5_0 lat=50 for=0.5 || fail "vfab fault spike exited $?"

# --- pause and resume node1
start_server node1 "$VFAB_TMP/sleep.log" sleep 120
sleeper=$SERVER_PID
for _ in $(seq 50); do
	pids=$(node_pids node1)
	[ -n "$pids" ] && break
	sleep 0.1
done
[ -n "$pids" ] || fail "no process in node1 to pause"
"$VFAB" --fabric "$VFAB_FABRIC" fault pause node1 1 || fail "vfab fault pause exited $?"
for pid in $pids; do
	# SIGSTOP takes effect when the process is next scheduled: give it a moment.
	for _ in $(seq 20); do
		[ "$(proc_state "$pid")" = T ] && break
		sleep 0.02
	done
	[ "$(proc_state "$pid")" = T ] || fail "node1 process $pid is '$(proc_state "$pid")' while paused, not T"
done
sleep 1.6
for pid in $pids; do
	s=$(proc_state "$pid")
	[ -n "$s" ] && [ "$s" != T ] || fail "node1 process $pid is '$s' after the pause, not running"
done
note "fault pause node1 1: $(wc -w <<<"$pids") process(es) T, then resumed"

# --- kill node1's processes; the node stays usable
"$VFAB" --fabric "$VFAB_FABRIC" fault kill node1 || fail "vfab fault kill exited $?"
for _ in $(seq 30); do
	[ -z "$(node_pids node1)" ] && break
	sleep 0.1
done
[ -z "$(node_pids node1)" ] || fail "node1 still runs $(node_pids node1) after fault kill"
wait_pid "$sleeper" 5 || true
[ "$(vx node1 hostname)" = node1 ] || fail "node1 does not work after fault kill"
note "fault kill node1: no process left, the node still runs commands"

# --- the async events ibv_asyncwatch saw (last: it needs the provider's HELLO hca=/async=)
kill_tree "$watch_pid"
grep -Eq 'event_type IBV_EVENT_PORT_ERR \(10\), port 1' "$VFAB_TMP/asyncwatch.log" &&
	grep -Eq 'event_type IBV_EVENT_PORT_ACTIVE \(9\), port 1' "$VFAB_TMP/asyncwatch.log" ||
	{ show "$VFAB_TMP/asyncwatch.log"; fail "ibv_asyncwatch saw no PORT_ERR and PORT_ACTIVE"; }
note "ibv_asyncwatch: PORT_ERR on down, PORT_ACTIVE on up"

# --- the report: valid JSON, with the traffic and every change above
"$VFAB" --fabric "$VFAB_FABRIC" report --json -o "$VFAB_TMP/report.json" || fail "vfab report --json exited $?"
python3 -m json.tool "$VFAB_TMP/report.json" >/dev/null || fail "the report is not valid JSON"
python3 - "$VFAB_TMP/report.json" "$want" <<'PY' || fail "the report misses what happened"
import json, sys
doc = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
kinds = [(f["kind"], f["target"], f["params"]) for f in doc["faults"]]
for need in [("link", "node0/mlx5_0", "down"), ("link", "node0/mlx5_0/1", "up"),
             ("link", "node1/mlx5_0", "down"), ("link", "node1/mlx5_0", "up"),
             ("shape", "node0/mlx5_0", "bw=25 lat=2"), ("spike", "node1/mlx5_0", "lat=50 for=0.5"),
             ("spike_end", "node1/mlx5_0", "lat=50"), ("pause", "node1", "1"),
             ("resume", "node1", ""), ("kill", "node1", "")]:
    assert need in kinds, (need, kinds)
links = {l["name"]: l for l in doc["links"]}
assert links["node0/mlx5_0/1/up"]["bytes"] >= 4 * want, links["node0/mlx5_0/1/up"]
assert links["node1/mlx5_0/1/up"]["spike_ns"] == 0
ports = {(p["node"], p["port"]): p for p in doc["ports"]}
assert ports[("node0", 1)]["counters"]["port_xmit_data"] >= want
assert ports[("node0", 1)]["counters"]["link_downed"] == 1
assert ports[("node0", 1)]["state"] == "ACTIVE"
assert doc["paused"] == []
PY
"$VFAB" --fabric "$VFAB_FABRIC" report >"$VFAB_TMP/report.txt" || fail "vfab report exited $?"
grep -q 'pause .*node1' "$VFAB_TMP/report.txt" || { show "$VFAB_TMP/report.txt"; fail "the summary lists no pause"; }
note "vfab report --json: valid, with traffic, link, shape, spike, pause, resume and kill"
