# shellcheck shell=bash
# Shared by the GPU scripts (sourced): where rdma-core and the vfab build are.
# rdma-core is the system's, or the Debian .debs carried in $VFAB_DEBS
# (default <repo>/.debs, fetched on a Debian 12 machine by fetch_debs.sh)
# unpacked with dpkg -x into $VFAB_RDMA_PREFIX, whose lib dir then goes to
# `vfab up --libdir` (the nodes' own ld.so cache: nothing in a node needs an
# environment variable) and to this shell's LD_LIBRARY_PATH and PATH.
# VFAB_FORCE_DEBS=1 takes the .debs even where the system has rdma-core (the
# CPU dry run does, to find a packaging mistake before a GPU machine does).
# Expects $repo. Sets libdir_args (for vfab up) and vfab (the CLI).

libdir_args=()
VFAB_RDMA_PREFIX=${VFAB_RDMA_PREFIX:-/opt/vfab-rdma}
if [ "${VFAB_FORCE_DEBS:-0}" = 1 ] || ! ldconfig -p | grep 'libibverbs.so.1 ' >/dev/null; then
	debs=${VFAB_DEBS:-$repo/.debs}
	ls "$debs"/*.deb >/dev/null 2>&1 || { echo "no libibverbs and no .debs in $debs" >&2; exit 1; }
	mkdir -p "$VFAB_RDMA_PREFIX"
	for d in "$debs"/*.deb; do dpkg -x "$d" "$VFAB_RDMA_PREFIX"; done
	libdir_args=(--libdir "$VFAB_RDMA_PREFIX/usr/lib/x86_64-linux-gnu")
	export LD_LIBRARY_PATH="$VFAB_RDMA_PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export PATH="$VFAB_RDMA_PREFIX/usr/bin:$PATH"
fi

# The vfab build: the carried one, or built here.
vfab="${VFAB_BUILD_DIR:-$repo/build}/bin/vfab"
if [ ! -x "$vfab" ]; then
	command -v cmake >/dev/null || { echo "no vfab build at $vfab and no cmake" >&2; exit 1; }
	cmake -S "$repo" -B "$repo/build" -DVFAB_BUILD_TESTS=OFF >/dev/null
	cmake --build "$repo/build" -j"$(nproc)" >/dev/null
fi
