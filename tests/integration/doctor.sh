#!/usr/bin/env bash
# vfab doctor on this host (CI runs as root on a host that runs vfab): every
# probe ok or warn, exit 0, the JSON form parses and names each probe; as an
# unprivileged user the probes run in a user namespace of their own, as a
# fabric without root would (netns/userns.h): root is a warning, the rest ok
# where the host allows user namespaces (int_rootless brings such a fabric
# up); the probes leave nothing behind on the host (no vfprobe* link, no
# mount on /mnt).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mounts_before=$(findmnt -rn -o TARGET | sort)
rc=0
"$VFAB" doctor >"$VFAB_TMP/doctor.txt" 2>&1 || rc=$?
cat "$VFAB_TMP/doctor.txt"
[ "$rc" = 0 ] || fail "vfab doctor exited $rc on a host that runs vfab"
grep -q '^FAIL' "$VFAB_TMP/doctor.txt" && fail "a probe failed"
"$VFAB" doctor --json >"$VFAB_TMP/doctor.json" || fail "vfab doctor --json exited $?"
python3 - "$VFAB_TMP/doctor.json" <<'PY' || fail "vfab doctor --json: wrong document"
import json, sys
d = json.load(open(sys.argv[1]))
names = [p["name"] for p in d["probes"]]
want = {"root", "user namespaces", "namespaces", "pid namespace", "veth and bridge", "net sysctls", "sysfs views",
        "device nodes", "overlayfs", "process_vm_writev", "ptrace scope", "/dev/shm",
        "cpuset cgroup", "/dev/fuse", "libibverbs"}
assert d["ok"] is True and want <= set(names), names
assert all(p["verdict"] in ("ok", "warn") and p["needed_by"] and p["detail"] for p in d["probes"])
PY

# Unprivileged: a copy of the CLI any user can run (the build may be under a mode-700 home).
cp "$VFAB" "$VFAB_TMP/vfab"
chmod 755 "$VFAB_TMP" "$VFAB_TMP/vfab"
rc=0
runuser -u nobody -- "$VFAB_TMP/vfab" doctor >"$VFAB_TMP/nobody.txt" 2>&1 || rc=$?
cat "$VFAB_TMP/nobody.txt"
# Not root: a fabric in a user namespace of its own, where the host allows them.
grep -q "^warn  root .*fabrics without root" "$VFAB_TMP/nobody.txt" ||
	fail "as nobody, 'root' is not a warning about fabrics without root"
if grep -q "^ok    user namespaces " "$VFAB_TMP/nobody.txt"; then
	[ "$rc" = 0 ] || fail "vfab doctor as nobody exited $rc with user namespaces allowed"
	for probe in namespaces 'veth and bridge' overlayfs 'device nodes'; do
		grep -q "^ok    $probe " "$VFAB_TMP/nobody.txt" ||
			fail "as nobody, in a user namespace, '$probe' is not ok"
	done
else
	[ "$rc" = 1 ] || fail "vfab doctor as nobody exited $rc without user namespaces"
fi
ip -o link | grep -q vfprobe && fail "a probe's link is left on the host"
[ "$(findmnt -rn -o TARGET | sort)" = "$mounts_before" ] || fail "the host's mounts changed"
note "vfab doctor: $(grep -c '^ok' "$VFAB_TMP/doctor.txt") ok, $(grep -c '^warn' "$VFAB_TMP/doctor.txt" || true) warn"
