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
# What vfab's binaries and the nodes need: rdma-core's libibverbs, libnl,
# libyaml and libfuse3 (vfabd). An image that lacks any of them (the GPU
# machine's Ubuntu has rdma-core and libnl, not libyaml or libfuse3) takes
# them all from the .debs, so that one rdma-core serves every process.
missing=0
for lib in libibverbs.so.1 libnl-route-3.so.200 libyaml-0.so.2 libfuse3.so.3; do
	ldconfig -p | grep "^[[:space:]]*$lib " >/dev/null || missing=1
done
if [ "${VFAB_FORCE_DEBS:-0}" = 1 ] || [ "$missing" = 1 ]; then
	debs=${VFAB_DEBS:-$repo/.debs}
	ls "$debs"/*.deb >/dev/null 2>&1 || { echo "missing libraries and no .debs in $debs" >&2; exit 1; }
	mkdir -p "$VFAB_RDMA_PREFIX"
	for d in "$debs"/*.deb; do dpkg -x "$d" "$VFAB_RDMA_PREFIX"; done
	rdma_lib=$VFAB_RDMA_PREFIX/usr/lib/x86_64-linux-gnu
	# NCCL opens libibverbs.so and libmlx5.so by their unversioned names,
	# which only -dev packages provide: in the prefix they name the carried
	# rdma-core, which the nodes' cache lists first, so a node never loads
	# an image's own rdma-core of another version beside vfab's provider.
	ln -sf libibverbs.so.1 "$rdma_lib/libibverbs.so"
	ln -sf libmlx5.so.1 "$rdma_lib/libmlx5.so"
	libdir_args=(--libdir "$rdma_lib")
	# vfabd starts from this environment: libfuse3 of the .debs lies in lib/.
	export LD_LIBRARY_PATH="$rdma_lib:$VFAB_RDMA_PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export PATH="$VFAB_RDMA_PREFIX/usr/bin:$PATH"
fi

# The vfab build: the carried one, or built here.
vfab="${VFAB_BUILD_DIR:-$repo/build}/bin/vfab"
if [ ! -x "$vfab" ]; then
	command -v cmake >/dev/null || { echo "no vfab build at $vfab and no cmake" >&2; exit 1; }
	cmake -S "$repo" -B "$repo/build" -DVFAB_BUILD_TESTS=OFF >/dev/null
	cmake --build "$repo/build" -j"$(nproc)" >/dev/null
fi
