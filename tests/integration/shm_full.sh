#!/usr/bin/env bash
# shm_full.sh: /dev/shm full (issue 27 Medium #5), in a mount namespace of
# its own (unshare -m) with a small tmpfs on /dev/shm, on a fabric of its
# own ($VFAB_FABRIC, see hostile.cmake). With no room for the region's
# header, `vfab up` fails with "No space left on device" (vfabd exits, no
# signal); with room for the header and a few MiB, ibv_create_cq and
# ibv_create_qp in a node fail with ENOMEM once the rings fill it, and
# nothing dies of SIGBUS.
set -euo pipefail
if [ -z "${VFAB_SHM_INNER:-}" ]; then
	command -v unshare >/dev/null || { echo "--- no unshare(1); skipped"; exit 77; }
	exec unshare -m --propagation private env VFAB_SHM_INNER=1 "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

shm_cleanup()
{
	"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
	vfab_cleanup
}
trap shm_cleanup EXIT
"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true

# The part of the header reserved at creation (VFAB_REGION_FIXED_BYTES) is 1.2 MiB.
mount -t tmpfs -o size=1m tmpfs /dev/shm
rc=0
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up4.log" 2>&1 || rc=$?
show "$VFAB_TMP/up4.log"
[ "$rc" = 1 ] || fail "vfab up on a 1 MiB /dev/shm exited $rc, not 1"
grep -q "No space left on device" "$VFAB_TMP/up4.log" || fail "vfab up did not say /dev/shm is full"
! grep -qi "signal" "$VFAB_TMP/up4.log" || fail "vfabd died of a signal"
[ ! -e "/dev/shm/vfab-$VFAB_FABRIC" ] || fail "a half-made region was left in /dev/shm"
note "1 MiB /dev/shm: vfab up fails cleanly"
"$VFAB" --fabric "$VFAB_FABRIC" down >/dev/null 2>&1 || true
umount /dev/shm

# The reserved header, the object tables' first pages and some 18 MiB of rings.
mount -t tmpfs -o size=20m tmpfs /dev/shm
"$VFAB" --fabric "$VFAB_FABRIC" up >"$VFAB_TMP/up.log" 2>&1 || {
	show "$VFAB_TMP/up.log"
	fail "vfab up on a 20 MiB /dev/shm"
}
rc=0
vx node0 "$VFAB_BIN/shm_fill" -d mlx5_0 >"$VFAB_TMP/fill.log" 2>&1 || rc=$?
show "$VFAB_TMP/fill.log"
[ "$rc" -lt 128 ] || fail "shm_fill died of signal $((rc - 128))"
[ "$rc" = 0 ] || fail "shm_fill exited $rc: the failures were not ENOMEM"
note "20 MiB /dev/shm: ibv_create_cq and ibv_create_qp fail with ENOMEM, no SIGBUS"
