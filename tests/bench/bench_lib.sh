# shellcheck shell=bash
# What bench.sh and middleware.sh share (sourced, not run):
#   bench_args DEFAULT_FABRIC "$@"   parses [--fabric NAME] [--json FILE]
#                                     [--build DIR] [-h], sets $fabric, $json
#                                     and $build, exports VFAB_FABRIC and
#                                     VFAB_BUILD_DIR, then sources lib.sh;
#                                     --help prints the script's header comment
#                                     (up to its `set -euo` line);
#   pair, pair_same                  a server in node1 and a client in node0;
#   bench_drop_stale                 takes down a fabric left by a crashed run;
#   check TEXT AWK_CONDITION         prints PASS or FAIL; a FAIL sets $failed;
#   lower A B                        the lower of two numbers.
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

# pair NAME SERVER_PORT SERVER_CMD... -- CLIENT_CMD...: the server in node1, the
# client in node0, both under a timeout; both must succeed. Client output in
# $VFAB_TMP/NAME.cli.
pair()
{
	local name=$1 port=$2 rc=0 src=0 srv_cmd=()
	shift 2
	while [ "$1" != -- ]; do
		srv_cmd+=("$1")
		shift
	done
	shift
	local srv=$VFAB_TMP/$name.srv cli=$VFAB_TMP/$name.cli
	start_server node1 "$srv" timeout 120 "${srv_cmd[@]}"
	wait_listen node1 "$port" 30 || { show "$srv"; fail "$name: server did not listen on $port"; }
	timeout 120 "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- "$@" >"$cli" 2>&1 || rc=$?
	wait_pid "$SERVER_PID" 30 || src=$?
	if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
		show "$srv" "$cli"
		fail "$name: client exited $rc, server exited $src"
	fi
}

# pair_same NAME SERVER_PORT CMD...: CMD as the server, CMD + node1's address
# as the client (perftest, tcp_stream).
pair_same()
{
	local name=$1 port=$2
	shift 2
	pair "$name" "$port" "$@" -- "$@" "$NODE1_IP"
}

bench_drop_stale()
{
	if [ -e "/run/vfab/$VFAB_FABRIC" ] || [ -e "/dev/shm/vfab-$VFAB_FABRIC" ]; then
		"$VFAB" --fabric "$VFAB_FABRIC" down || fail "could not take down a stale $VFAB_FABRIC"
	fi
}

failed=0
# goal TEXT AWK-CONDITION: a target reported, never enforced.
goal()
{
	if awk "BEGIN { exit !($2) }"; then
		echo "GOAL  met:    $1"
	else
		echo "GOAL  missed: $1"
	fi
}

check()
{
	if awk "BEGIN { exit !($2) }"; then
		echo "PASS  $1"
	else
		echo "FAIL  $1"
		failed=1
	fi
}

# lower A B: the lower of two numbers (two readings of one ceiling).
lower()
{
	awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'
}
