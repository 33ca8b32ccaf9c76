#!/usr/bin/env bash
# vfab doctor on this host (CI runs as root on a host that runs vfab): every
# probe ok or warn, exit 0, the JSON form parses and names each probe; as an
# unprivileged user the root, namespace and mount probes fail and the exit
# status is 1, and `vfab up` fails naming what doctor finds missing; the
# probes leave nothing behind on the host (no vfprobe*
# link, no mount on /mnt).
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
want = {"root", "namespaces", "pid namespace", "veth and bridge", "net sysctls", "sysfs views",
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
[ "$rc" = 1 ] || fail "vfab doctor as nobody exited $rc, not 1"
for probe in root namespaces 'veth and bridge' overlayfs; do
	grep -q "^FAIL  $probe " "$VFAB_TMP/nobody.txt" || fail "as nobody, '$probe' did not fail"
done
# A failed up names what the host lacks, as doctor finds it.
rc=0
runuser -u nobody -- "$VFAB_TMP/vfab" --fabric tdocnb up >"$VFAB_TMP/nobody-up.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "vfab up as nobody succeeded"
grep -q "^vfab up: vfab doctor finds: namespaces: " "$VFAB_TMP/nobody-up.txt" ||
	{ show "$VFAB_TMP/nobody-up.txt"; fail "vfab up as nobody does not say what is missing"; }
[ ! -e /run/vfab/tdocnb ] || fail "vfab up as nobody left /run/vfab/tdocnb"

ip -o link | grep -q vfprobe && fail "a probe's link is left on the host"
[ "$(findmnt -rn -o TARGET | sort)" = "$mounts_before" ] || fail "the host's mounts changed"
note "vfab doctor: $(grep -c '^ok' "$VFAB_TMP/doctor.txt") ok, $(grep -c '^warn' "$VFAB_TMP/doctor.txt" || true) warn"
