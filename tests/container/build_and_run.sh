#!/usr/bin/env bash
# The CI image (container/Containerfile, docs/CONTAINER.md), built and run
# with podman on this host:
#
#   1. a Debian 12 base image: $VFAB_CTR_BASE (default debian:12) when the
#      host's podman already has it, else debootstrap bookworm (minbase) from
#      the host's Debian mirror and `podman import`;
#   2. podman build -f container/Containerfile (build stage: cmake + cpack
#      .deb; runtime stage: the .deb and the RDMA tools);
#   3. the documented runs: --privileged, then the minimal capability set,
#      each running tests/container/in_container.sh (doctor, up, ibv_devinfo,
#      ib_write_bw and rping node0 -> node1, pyverbs, CPU sets, loss, down);
#   4. what fails without them, with the message docs/CONTAINER.md quotes:
#      no capabilities, no MKNOD, /proc/sys read-only, the default 64 MiB /dev/shm.
#
# Everything lives in a podman storage of its own under one temporary folder
# (--root/--runroot), removed on exit, failure included: the host's podman
# images and containers are only read (the base image, when present); the
# empty libpod_parent cgroups podman leaves go too when this run made them. The
# containers run with --network=none (vfab builds its bridges and veths in the
# container's own network namespace) and the build with --network=host (apt),
# so nothing is added to the host's network.
#
# ctest: ctr_build_and_run, label "container" (not part of ./quickstart test).
# Exit 77 (skipped) without root, podman, or a base image and debootstrap.
#
# Environment: VFAB_FABRIC (fabric name inside the containers, default tctrc),
# VFAB_CTR_BASE (default debian:12), VFAB_CTR_MIRROR (debootstrap mirror,
# default: the host's apt source), VFAB_CTR_STORAGE_DRIVER (overlay | vfs,
# default overlay), VFAB_CTR_PODMAN_OPTS (podman run/build options to use
# instead of probing them: see "runtime" below), VFAB_CTR_KEEP=1 (keep the
# temporary folder: for debugging only).
set -euo pipefail

src=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
fabric=${VFAB_FABRIC:-tctrc}
base=${VFAB_CTR_BASE:-debian:12}
driver=${VFAB_CTR_STORAGE_DRIVER:-overlay}
tag=localhost/vfab-ctr-test:$$

note()
{
	printf 'container: %s\n' "$*"
}
fail()
{
	printf 'container: FAIL: %s\n' "$*" >&2
	exit 1
}
skip()
{
	printf 'container: skipped: %s\n' "$*"
	exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (rootful podman: vfab needs real capabilities)"
command -v podman >/dev/null || skip "no podman (apt-get install podman)"

work=$(mktemp -d /var/tmp/vfab-ctr.XXXXXX)
# With cgroupfs, podman makes libpod_parent/ (and libpod_parent/conmon) in
# each hierarchy and leaves them: the ones this run made go at the end.
cg_before=$(ls -d /sys/fs/cgroup/libpod_parent /sys/fs/cgroup/*/libpod_parent 2>/dev/null || true)
P=(podman --root "$work/storage" --runroot "$work/run" --tmpdir "$work/tmp"
	--storage-driver "$driver" --events-backend none)

# Unmounts whatever is still mounted below $work (debootstrap's /proc and
# /sys after a failure, the overlay driver's private bind), deepest first.
umount_below()
{
	local m
	awk -v w="$work" '$5 == w || index($5, w "/") == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}
cleanup()
{
	local rc=$?
	set +e
	if [ "${VFAB_CTR_KEEP:-0}" = 1 ]; then
		note "kept $work (VFAB_CTR_KEEP=1): remove it with umount and rm -rf"
		return $rc
	fi
	if [ -d "$work/storage" ]; then
		"${P[@]}" rm -af -t 0 >/dev/null 2>&1
		"${P[@]}" rmi -af >/dev/null 2>&1
	fi
	umount_below
	rm -rf --one-file-system "$work"
	# Empty cgroups only: rmdir refuses one with tasks or children (someone else's podman).
	for d in /sys/fs/cgroup/libpod_parent /sys/fs/cgroup/*/libpod_parent; do
		if [ -d "$d" ] && ! grep -qxF "$d" <<<"$cg_before"; then
			find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
		fi
	done
	[ ! -e "$work" ] || printf 'container: could not remove %s\n' "$work" >&2
	return $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. the base image ----------------------------------------------------
# The host's Debian mirror: the first URI of its bookworm sources.
host_mirror()
{
	local u
	u=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources \
		2>/dev/null | grep -v security | head -1)
	[ -n "$u" ] || u=$(awk '$1 == "deb" && $3 ~ /^bookworm/ { print $2; exit }' \
		/etc/apt/sources.list 2>/dev/null)
	echo "${u:-http://deb.debian.org/debian}"
}

t0=$SECONDS
if podman image exists "$base" 2>/dev/null; then
	podman save "$base" 2>/dev/null | "${P[@]}" load >/dev/null ||
		fail "podman save $base | podman load into the test's storage"
	"${P[@]}" image exists "$base" || fail "$base did not load"
	build_base=$base
	note "base: $base from the host's podman storage (read only)"
else
	command -v debootstrap >/dev/null ||
		skip "no $base image and no debootstrap to make one (apt-get install debootstrap)"
	mirror=${VFAB_CTR_MIRROR:-$(host_mirror)}
	note "base: no $base here; debootstrap --variant=minbase bookworm from $mirror"
	debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
	umount_below # debootstrap's /proc, /sys when it left them
	# The sources of the official debian:12 image: bookworm, -updates, -security.
	rm -f "$work/rootfs/etc/apt/sources.list"
	cat >"$work/rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	build_base=localhost/vfab-ctr-base:bookworm
	tar -C "$work/rootfs" -c . | "${P[@]}" import - "$build_base" >/dev/null ||
		fail "podman import of the debootstrap tree"
	rm -rf --one-file-system "$work/rootfs"
	note "base: $build_base imported ($((SECONDS - t0)) s)"
fi

# ---- runtime: the podman options this host needs ---------------------------
# Two host limits seen on the development VM (docs/CONTAINER.md "Podman on
# this host"): crun refuses a cgroup v1/v2 hybrid whose v2 hierarchy has a
# controller ("cgroups in hybrid mode not supported"), runc does not; and
# podman sets RLIMIT_NOFILE/NPROC above the host's hard limits, which a root
# without CAP_SYS_RESOURCE cannot ("setrlimit ... Operation not permitted").
# The first set of options under which `true` runs is used for build and runs.
if [ -n "${VFAB_CTR_PODMAN_OPTS+x}" ]; then
	read -ra opts <<<"$VFAB_CTR_PODMAN_OPTS"
else
	limits="--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=4096:4096"
	found=0
	for o in "" "$limits" "--runtime runc" "--runtime runc $limits"; do
		read -ra opts <<<"$o"
		if "${P[@]}" run --rm --network=none "${opts[@]}" "$build_base" true >"$work/probe.log" 2>&1; then
			found=1
			break
		fi
		note "podman run ${o:-(no options)}: $(tail -1 "$work/probe.log")"
	done
	[ "$found" = 1 ] || fail "no podman options under which a container runs here"
fi
note "podman options: ${opts[*]:-(none)}"

# ---- 2. build --------------------------------------------------------------
t0=$SECONDS
"${P[@]}" build --pull=never --network=host "${opts[@]}" --build-arg "BASE=$build_base" \
	-f "$src/container/Containerfile" -t "$tag" "$src" >"$work/build.log" 2>&1 ||
	{ tail -40 "$work/build.log"; fail "podman build -f container/Containerfile"; }
build_s=$((SECONDS - t0))
size=$("${P[@]}" image inspect --format '{{.Size}}' "$tag")
deb=$(grep -o 'vfab_[0-9.]*_[a-z0-9]*\.deb' "$work/build.log" | head -1)
note "built $tag in $build_s s: $((size / 1000000)) MB ($deb)"

# ---- 3. the documented runs ------------------------------------------------
# run NAME OPTS... -- CMD...: a container from the image, the test folder at /t.
run()
{
	local name=$1
	shift
	local o=()
	while [ "$1" != -- ]; do
		o+=("$1")
		shift
	done
	shift
	"${P[@]}" run --rm --name "vfab-ctr-$$-$name" --network=none "${opts[@]}" "${o[@]}" \
		-v "$src/tests/container:/t:ro" "$tag" "$@"
}

# shellcheck disable=SC2054 # the commas belong to --cap-add
MIN_CAPS=(--cap-add SYS_ADMIN,NET_ADMIN,SYS_PTRACE,MKNOD --security-opt unmask=/proc/sys)

# checked NAME OPTS...: in_container.sh under these options must pass.
checked()
{
	local name=$1 t=$SECONDS
	shift
	run "$name" "$@" -- /t/in_container.sh "$fabric" >"$work/$name.log" 2>&1 ||
		{ cat "$work/$name.log"; fail "$name: podman run $* vfab:test /t/in_container.sh"; }
	grep -q '^ALL OK$' "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no ALL OK"; }
	note "$name ($* ; $((SECONDS - t)) s):"
	grep -E '^(ok|warn|FAIL) |^vfab can|^fabric .* (up|down) in' "$work/$name.log" | sed 's/^/  /'
	sed -n 's/^RESULT /  /p' "$work/$name.log"
}

checked privileged --privileged --shm-size=2g
checked mincaps "${MIN_CAPS[@]}" --shm-size=2g

# ---- 4. what fails without them --------------------------------------------
# refused NAME WHAT PATTERN OPTS...: doctor, then up, under OPTS; the output
# must match PATTERN (grep -E); WHAT must fail: doctor, or both (doctor and up).
refused()
{
	local name=$1 what=$2 pat=$3 out
	shift 3
	run "$name" "$@" -- bash -c "vfab doctor; echo \"doctor exit \$?\"; vfab --fabric $fabric up;
		echo \"up exit \$?\"; vfab --fabric $fabric down >/dev/null 2>&1" >"$work/$name.log" 2>&1 || true
	out=$work/$name.log
	grep -qE "$pat" "$out" || { cat "$out"; fail "$name: no '$pat' in the output"; }
	case $what in
	both) grep -q '^up exit 1$' "$out" || { cat "$out"; fail "$name: vfab up did not fail"; } ;;&
	doctor | both)
		grep -q '^doctor exit 1$' "$out" || { cat "$out"; fail "$name: vfab doctor did not fail"; }
		;;
	esac
	note "$name ($*):"
	grep -E '^(FAIL|warn) |^vfab (up|cannot)|^(doctor|up) exit' "$out" | sed 's/^/  /'
}

refused nocaps both '^FAIL  namespaces' --shm-size=2g
refused nomknod both '^FAIL  device nodes .*CAP_MKNOD' \
	--cap-add SYS_ADMIN,NET_ADMIN,SYS_PTRACE --security-opt unmask=/proc/sys --shm-size=2g
grep -q 'write the sysfs view of node' "$work/nomknod.log" || fail "nomknod: vfab up's message changed"
refused procsys-ro both '^FAIL  net sysctls .*read-only' \
	--cap-add SYS_ADMIN,NET_ADMIN,SYS_PTRACE,MKNOD --shm-size=2g
grep -q 'Read-only file system.*forwarding sysctls' "$work/procsys-ro.log" ||
	fail "procsys-ro: vfab up's message changed"
refused shm-64m doctor '^FAIL  /dev/shm' "${MIN_CAPS[@]}"

note "all container checks passed"
