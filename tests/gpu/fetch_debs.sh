#!/usr/bin/env bash
# On a Debian 12 machine: download the .debs a GPU machine without rdma-core
# needs (libibverbs, perftest, and the libraries vfab's binaries link to) into
# .debs/ at the repo root, to be carried next to the build (ignored by git).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$repo/.debs"
cd "$repo/.debs"
apt-get download libibverbs1 ibverbs-providers ibverbs-utils perftest librdmacm1 \
	libnl-3-200 libnl-route-3-200 libyaml-0-2 libfuse3-3
ls -la
