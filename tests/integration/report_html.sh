#!/usr/bin/env bash
# vfab report --html (issue 24): one self-contained page of the fabric. Traffic
# runs node0 -> node1 for 4 s with a latency spike on node0's port in the
# middle; the page must have the topology (both nodes, their leaf), the
# throughput and queueing charts with a series per busy link drawn from
# several of vfabd's one-second samples, the spike marked on the charts and
# listed in the fault log, and the ports' counters. Headless Chromium must
# load it (its DOM keeps the charts' SVG) and render it (a screenshot).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

trap vfab_cleanup EXIT
command -v chromium >/dev/null || fail "chromium is not installed"
port=18795
start_server node1 "$VFAB_TMP/bw.srv" ib_write_bw -d mlx5_0 -x 3 -F -D 4 -p "$port"
wait_listen node1 "$port" 30 || { show "$VFAB_TMP/bw.srv"; fail "no ib_write_bw server"; }
vx node0 ib_write_bw -d mlx5_0 -x 3 -F -D 4 -p "$port" "$NODE1_IP" >"$VFAB_TMP/bw.cli" 2>&1 &
cli=$!
sleep 2
"$VFAB" --fabric "$VFAB_FABRIC" fault spike node0/mlx5_0 lat=20 for=1 >/dev/null ||
	fail "vfab fault spike"
wait_pid "$cli" 60 || { show "$VFAB_TMP/bw.cli"; fail "ib_write_bw client"; }
wait_pid "$SERVER_PID" 30 || { show "$VFAB_TMP/bw.srv"; fail "ib_write_bw server"; }
sleep 2 # one more sample after the traffic

page=$VFAB_TMP/report.html
"$VFAB" --fabric "$VFAB_FABRIC" report --html "$page" || fail "vfab report --html"
python3 - "$page" <<'PY' || fail "the page lacks what it must show"
import re, sys
html = open(sys.argv[1]).read()
assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html, \
    "not a self-contained page"
charts = html.count('<svg class="chart"')
assert charts == 2, "%d charts, want throughput and queueing" % charts
series = re.findall(r'<polyline class="series" stroke="[^"]*" data-link="([^"]*)" points="([^"]*)"', html)
busy = []
for link, pts in series:
    ys = [float(p.split(",")[1]) for p in pts.split()]
    if len(ys) >= 3 and len(set(ys)) > 1:
        busy.append(link)
assert "node0/mlx5_0/1/up" in busy and "node1/mlx5_0/1/down" in busy, \
    "no drawn series for node0's up and node1's down link: %s" % busy
assert html.count('class="fault"') >= 2, "the spike is not marked on the charts"
assert re.search(r"<td>spike</td><td>node0/mlx5_0</td>", html), "the spike is not in the fault log"
for n in ("node0", "node1", "leaf0"):
    assert ">%s</text>" % n in html, "%s missing from the topology" % n
assert "<td>node0/mlx5_0/1</td><td>ACTIVE</td>" in html, "no port table"
print("page: %d charts, busy links %s" % (charts, ", ".join(sorted(set(busy)))))
PY

# Rendered by a browser: the DOM it built keeps the SVG, and it paints a picture.
chrome=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1200)
timeout 60 "${chrome[@]}" --dump-dom "file://$page" >"$VFAB_TMP/dom.html" 2>"$VFAB_TMP/chrome.log" ||
	{ show "$VFAB_TMP/chrome.log"; fail "chromium could not load the page"; }
n=$(grep -o '<polyline' "$VFAB_TMP/dom.html" | wc -l)
[ "$n" -ge 2 ] || fail "the rendered DOM has $n polylines"
timeout 60 "${chrome[@]}" --screenshot="$VFAB_TMP/report.png" "file://$page" \
	>>"$VFAB_TMP/chrome.log" 2>&1 || { show "$VFAB_TMP/chrome.log"; fail "no screenshot"; }
python3 - "$VFAB_TMP/report.png" <<'PY' || fail "the screenshot is not a 1000x1200 picture"
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", d[16:24])
assert (w, h) == (1000, 1200) and len(d) > 20000, (w, h, len(d))
print("screenshot: %dx%d, %d bytes" % (w, h, len(d)))
PY
note "vfab report --html: topology, throughput and queueing charts with the spike, rendered by Chromium"
