#!/usr/bin/env bash
# Fixture clean-up of the integration tests: takes the test fabric down and
# checks that nothing of it is left on the host.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s%N)
"$VFAB" --fabric "$VFAB_FABRIC" down || fail "vfab down exited $?"
note "vfab down took $((($(date +%s%N) - start) / 1000000)) ms"

left=""
[ -z "$(ip netns list | grep "vfab-$VFAB_FABRIC-" || true)" ] || left="$left netns"
[ ! -e "/dev/shm/vfab-$VFAB_FABRIC" ] || left="$left /dev/shm/vfab-$VFAB_FABRIC"
[ ! -e "/dev/shm/vfab-$VFAB_FABRIC.users" ] || left="$left /dev/shm/vfab-$VFAB_FABRIC.users"
[ ! -e "/run/vfab/$VFAB_FABRIC" ] || left="$left /run/vfab/$VFAB_FABRIC"
! grep -q -e "/run/vfab/$VFAB_FABRIC/" -e "vfab-$VFAB_FABRIC-" /proc/mounts || left="$left mounts"
[ -z "$left" ] || fail "vfab down left behind:$left"
