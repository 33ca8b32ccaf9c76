#!/usr/bin/env bash
# ud_grh.sh: UD receive completions carry the RoCE L3 type in wc.sl and the
# GRH area as a ConnectX fills it, for every GID of mlx5_0 in node0
# (tests/integration/ud_grh.py, pyverbs with Debian's interpreter).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 -c 'import pyverbs' || fail "/usr/bin/python3 cannot import pyverbs"
timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
	/usr/bin/python3 "$VFAB_REPO/tests/integration/ud_grh.py" mlx5_0 || fail "ud_grh.py failed"
