#!/usr/bin/env bash
# vfab as installed, not from its build tree: `cmake --install` of the build
# into a staging root (DESTDIR, prefix /opt/vfab-test), then the installed
# CLI brings up a fabric of its own and RDMA works across its nodes through
# the installed daemon, provider and preload/CM libraries (ibv_devinfo,
# ib_write_bw, rping over the RDMA CM); the man page and the completion are
# there and list the same verbs as `vfab --help`, nothing lands in the
# host's /etc; the uninstall target removes every file; `cpack -G DEB` makes
# a package listing the same files, which, unpacked into a root of its own,
# runs the same checks with the build tree out of reach (hidden by an empty
# mount in a mount namespace of the test's own) and leaves nothing once
# removed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

fabric=$VFAB_FABRIC
stage=$VFAB_TMP/stage prefix=/opt/vfab-test
chmod 755 "$VFAB_TMP"
inst_cleanup()
{
	[ -x "$stage$prefix/bin/vfab" ] && "$stage$prefix/bin/vfab" --fabric "$fabric" down >/dev/null 2>&1
	vfab_cleanup
}
trap inst_cleanup EXIT

etc_before=$(find /etc/libibverbs.d -type f 2>/dev/null | sort)
DESTDIR=$stage cmake --install "$VFAB_BUILD_DIR" --prefix "$prefix" >"$VFAB_TMP/install.log" 2>&1 ||
	{ show "$VFAB_TMP/install.log"; fail "cmake --install"; }
root=$stage$prefix
pabi=$(ls "$VFAB_BUILD_DIR"/lib/libvfab-rdmav*.so | sed 's/.*rdmav\([0-9]*\)\.so/\1/')
for f in bin/vfab libexec/vfab/vfabd "lib/libibverbs/libvfab-rdmav$pabi.so" \
	lib/vfab/libvfab-preload.so lib/vfab/libvfab-cm.so share/vfab/configs/default.yaml \
	share/vfab/configs/dgx-2x8.yaml share/man/man1/vfab.1 share/doc/vfab/TRUST.md \
	share/bash-completion/completions/vfab; do
	[ -e "$root/$f" ] || fail "not installed: $prefix/$f"
done
[ "$(find /etc/libibverbs.d -type f 2>/dev/null | sort)" = "$etc_before" ] ||
	fail "the install touched the host's /etc/libibverbs.d"
grep -q '^.SH "VFAB doctor"' "$root/share/man/man1/vfab.1" || fail "vfab(1) lacks a verb's section"
bash -n "$root/share/bash-completion/completions/vfab" || fail "the completion script does not parse"
# One verb table: --help, the man page's sections and the completion agree.
help_verbs=$("$root/bin/vfab" --help | sed -n '/^verbs:/,/^[^ ]/s/^  \([a-z]*\) .*/\1/p' | sort)
man_verbs=$(sed -n 's/^\.SH "VFAB \([a-z]*\)"$/\1/p' "$root/share/man/man1/vfab.1" | sort)
comp_verbs=$(PATH=$root/bin:$PATH bash -c '. "$1"; COMP_WORDS=(vfab ""); COMP_CWORD=1; _vfab
	printf "%s\n" "${COMPREPLY[@]}"' _ "$root/share/bash-completion/completions/vfab" |
	grep -v '^-' | sort)
[ -n "$help_verbs" ] && [ "$help_verbs" = "$man_verbs" ] && [ "$help_verbs" = "$comp_verbs" ] ||
	fail "verbs differ: --help [$(echo $help_verbs)] man [$(echo $man_verbs)] completion [$(echo $comp_verbs)]"
note "installed: $(find "$root" -type f | wc -l) files under $prefix"

# run_installed ROOT WHAT: the CLI under ROOT finds its daemon and libraries
# from its own location; a fabric of its own, RDMA across its nodes.
run_installed()
{
	local root=$1 what=$2 vfab=$1/bin/vfab srv
	"$vfab" --fabric "$fabric" up "$root/share/vfab/configs/default.yaml" >"$VFAB_TMP/up.log" 2>&1 ||
		{ show "$VFAB_TMP/up.log"; fail "the $what vfab up"; }
	[ "$(readlink "/proc/$(cat "/run/vfab/$fabric/vfabd.pid")/exe")" = "$root/libexec/vfab/vfabd" ] ||
		fail "the running vfabd is not the $what one"
	grep -qx "driver $root/lib/libibverbs/libvfab" \
		"/run/vfab/$fabric/nodes/node0/etc-upper/libibverbs.d/vfab.driver" ||
		fail "the nodes do not load the $what provider"
	"$vfab" --fabric "$fabric" exec node0 -- ibv_devinfo -d mlx5_0 >"$VFAB_TMP/devinfo.txt" 2>&1 ||
		{ show "$VFAB_TMP/devinfo.txt"; fail "ibv_devinfo in a node of the $what vfab"; }
	grep -q PORT_ACTIVE "$VFAB_TMP/devinfo.txt" || fail "ibv_devinfo: no active port"
	"$vfab" --fabric "$fabric" exec node1 -- ib_write_bw -d mlx5_0 -x 3 -F -n 500 -p 18761 \
		>"$VFAB_TMP/bw.srv" 2>&1 &
	srv=$!
	VFAB_SERVER_PIDS+=("$srv")
	sleep 1
	"$vfab" --fabric "$fabric" exec node0 -- ib_write_bw -d mlx5_0 -x 3 -F -n 500 -p 18761 \
		"$NODE1_IP" >"$VFAB_TMP/bw.cli" 2>&1 ||
		{ show "$VFAB_TMP/bw.srv" "$VFAB_TMP/bw.cli"; fail "ib_write_bw"; }
	wait_pid "$srv" 30 || fail "the ib_write_bw server failed"
	"$vfab" --fabric "$fabric" exec node1 -- rping -s -a "$NODE1_IP" -C 5 -v \
		>"$VFAB_TMP/rping.srv" 2>&1 &
	srv=$!
	VFAB_SERVER_PIDS+=("$srv")
	sleep 0.5
	timeout 30 "$vfab" --fabric "$fabric" exec node0 -- rping -c -a "$NODE1_IP" -C 5 -v \
		>"$VFAB_TMP/rping.cli" 2>&1 || { show "$VFAB_TMP/rping.srv" "$VFAB_TMP/rping.cli"; fail "rping"; }
	wait_pid "$srv" 30 || fail "the rping server failed"
	[ "$(grep -c 'ping data' "$VFAB_TMP/rping.cli")" = 5 ] || fail "rping: not 5 pings"
	"$vfab" --fabric "$fabric" down >/dev/null || fail "the $what vfab down"
	note "$what vfab: up, ibv_devinfo, ib_write_bw ($(perftest_value "$VFAB_TMP/bw.cli" 'BW average' 4) MB/s), rping, down"
}

run_installed "$root" installed

# Uninstall: every installed file goes, and vfab's own directories with them.
DESTDIR=$stage cmake --build "$VFAB_BUILD_DIR" --target uninstall >"$VFAB_TMP/uninstall.log" 2>&1 ||
	{ show "$VFAB_TMP/uninstall.log"; fail "the uninstall target"; }
left=$(find "$root" -type f | wc -l)
[ "$left" = 0 ] || fail "uninstall left $left files: $(find "$root" -type f | head -3)"
[ ! -e "$root/lib/vfab" ] && [ ! -e "$root/libexec/vfab" ] && [ ! -e "$root/share/vfab" ] ||
	fail "uninstall left vfab's directories"

# The Debian package of the same install.
(cd "$VFAB_BUILD_DIR" && cpack -G DEB -B "$VFAB_TMP/deb" >"$VFAB_TMP/cpack.log" 2>&1) ||
	{ show "$VFAB_TMP/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$VFAB_TMP"/deb/vfab_*.deb)
dpkg-deb -c "$deb" >"$VFAB_TMP/deb.txt"
for f in bin/vfab libexec/vfab/vfabd "lib/libibverbs/libvfab-rdmav$pabi.so" lib/vfab/libvfab-cm.so \
	share/man/man1/vfab.1; do
	grep -q "/$f\$" "$VFAB_TMP/deb.txt" || fail "the .deb lacks $f"
done
dpkg-deb -f "$deb" Depends | grep -q libibverbs1 || fail "the .deb does not depend on libibverbs1"
dpkg-deb -f "$deb" Depends | grep -q libfuse3-3 ||
	fail "the .deb does not depend on libfuse3-3 (vfabd's counters file system)"
note "$(basename "$deb"): $(grep -c '^-' "$VFAB_TMP/deb.txt") files, Depends: $(dpkg-deb -f "$deb" Depends)"

# The package, unpacked into a root of its own, run with the build tree out
# of reach: a mount namespace of this test's own hides it under an empty
# tmpfs (the fabric's namespaces and files are made inside, and taken down
# there too). Then the unpacked files are removed: nothing of it is left.
unpacked=$VFAB_TMP/debroot
dpkg-deb -x "$deb" "$unpacked" || fail "dpkg-deb -x"
droot=$(dirname "$(dirname "$(find "$unpacked" -path '*/bin/vfab' | head -1)")")
[ -x "$droot/bin/vfab" ] || fail "no bin/vfab in the unpacked .deb"
export -f run_installed show fail note wait_pid kill_tree perftest_value pgrep
export fabric NODE1_IP VFAB_TMP
unshare --mount --propagation private bash -c '
	VFAB_SERVER_PIDS=()
	trap "\"\$1/bin/vfab\" --fabric \"\$fabric\" down >/dev/null 2>&1" EXIT
	mount -t tmpfs -o size=1m,mode=0755 none "$2" || exit 3
	[ ! -e "$2/bin/vfab" ] || exit 4
	run_installed "$1" "packaged"' _ "$droot" "$VFAB_BUILD_DIR" ||
	fail "the packaged vfab with the build tree hidden (exit $?)"
rm -rf "$unpacked"
[ ! -e "$unpacked" ] || fail "the unpacked package could not be removed"
