# shellcheck shell=bash
# The options every benchmark script takes (sourced, not run):
#   bench_args DEFAULT_FABRIC "$@"   parses [--fabric NAME] [--json FILE]
#                                     [--build DIR] [-h], sets $fabric, $json
#                                     and $build, exports VFAB_FABRIC and
#                                     VFAB_BUILD_DIR, then sources lib.sh.
# --help prints the script's header comment (up to its `set -euo` line).
bench_args()
{
	fabric=$1 json="" build=""
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--fabric) fabric=${2:?--fabric needs a name} && shift 2 ;;
		--json) json=${2:?--json needs a file} && shift 2 ;;
		--build) build=${2:?--build needs a directory} && shift 2 ;;
		-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' && exit 0 ;;
		*) echo "$(basename "$0"): unknown argument '$1' (see --help)" >&2 && exit 2 ;;
		esac
	done
	export VFAB_FABRIC=$fabric
	[ -z "$build" ] || export VFAB_BUILD_DIR=$build
	# shellcheck source=../integration/lib.sh
	. "$(dirname "$0")/../integration/lib.sh"
}
