#!/usr/bin/env bash
# limits.sh: per-HCA object limits are a ConnectX's on a fabric of any size
# (issue 27 Medium #6), on a fabric of its own ($VFAB_FABRIC, limits.cmake):
# 16 nodes, every HCA reports max_qp 262144, max_cq/max_mr/max_pd 16777216
# and max_srq 8388608 (they were the fabric's tables split between its
# HCAs: 1024 QPs each on 16 nodes), and four processes on one node hold
# 1000 QPs (each with its CQ, in INIT) at once, then free them all. A
# fabric whose YAML lowers fabric.limits.max_qp to 100 gives a process
# that asks for more ENOMEM at the 101st.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

F=$VFAB_FABRIC
V() { "$VFAB" --fabric "$F" "$@"; }
holders=()
limits_cleanup()
{
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null || true; done
	V down >/dev/null 2>&1 || true
	vfab_cleanup
}
trap limits_cleanup EXIT
V down >/dev/null 2>&1 || true

{
	echo "nodes:"
	for i in $(seq 0 15); do echo "  - id: node$i"; done
} >"$VFAB_TMP/sixteen.yaml"
V up "$VFAB_TMP/sixteen.yaml" >"$VFAB_TMP/up.log" 2>&1 || { show "$VFAB_TMP/up.log"; fail "vfab up with 16 nodes"; }

want="mlx5_0 max_qp=262144 max_cq=16777216 max_mr=16777216 max_pd=16777216 max_srq=8388608"
for i in 0 7 15; do
	got=$(V exec "node$i" -- "$VFAB_BIN/qp_many" 0 </dev/null | head -1)
	[ "$got" = "$want" ] || fail "node$i reports '$got', not '$want'"
done
note "16 nodes: every HCA reports ConnectX limits ($want)"

# Four processes of node3 hold 1000 QPs each at once: their stdin stays open
# until the test closes it.
mkfifo "$VFAB_TMP/hold"
exec 7<>"$VFAB_TMP/hold"
for k in 1 2 3 4; do
	V exec node3 -- "$VFAB_BIN/qp_many" 1000 <"$VFAB_TMP/hold" >"$VFAB_TMP/many$k.log" 2>&1 7>&- &
	holders+=($!)
done
for k in 1 2 3 4; do
	for _ in $(seq 600); do
		grep -q "^made " "$VFAB_TMP/many$k.log" 2>/dev/null && break
		sleep 0.1
	done
	grep -qx "made 1000" "$VFAB_TMP/many$k.log" || { show "$VFAB_TMP/many$k.log"; fail "process $k of node3 did not make 1000 QPs"; }
done
qps=$(V status --json 2>/dev/null | sed -n 's/.*"qps":\([0-9]*\).*/\1/p' | head -1)
[ -n "$qps" ] && [ "$qps" -ge 4000 ] || fail "vfab status counts ${qps:-no} QPs while 4 x 1000 are held"
exec 7>&-
for k in 1 2 3 4; do
	rc=0
	wait "${holders[$((k - 1))]}" || rc=$?
	[ "$rc" = 0 ] || { show "$VFAB_TMP/many$k.log"; fail "process $k exited $rc"; }
done
holders=()
note "node3: 4 processes x 1000 QPs at once ($qps QPs in the fabric), all destroyed cleanly"
V down >/dev/null 2>&1 || fail "vfab down"

printf 'nodes: [{id: node0}, {id: node1}]\nfabric:\n  limits: {max_qp: 100}\n' >"$VFAB_TMP/low.yaml"
V up "$VFAB_TMP/low.yaml" >"$VFAB_TMP/up2.log" 2>&1 || { show "$VFAB_TMP/up2.log"; fail "vfab up with fabric.limits"; }
rc=0
V exec node1 -- "$VFAB_BIN/qp_many" 101 </dev/null >"$VFAB_TMP/low.log" 2>&1 || rc=$?
show "$VFAB_TMP/low.log"
[ "$rc" = 1 ] || fail "qp_many 101 under max_qp 100 exited $rc"
grep -q "max_qp=100 " "$VFAB_TMP/low.log" || fail "max_qp is not the configured 100"
grep -qx "qp_many: QP 101: Cannot allocate memory" "$VFAB_TMP/low.log" || fail "QP 101 did not fail with ENOMEM"
note "fabric.limits.max_qp 100: the 101st QP fails with ENOMEM"
