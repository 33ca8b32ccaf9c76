# shellcheck shell=bash
# Two machines as two network namespaces, $HA and $HB, joined by one veth
# whose ends are each one's eth1 (MTU 9000): nothing of this host's network
# is touched. What tests/integration/multihost.sh and tests/bench/multihost.sh
# stand on (sourced after lib.sh, with F set: the fabrics are $F-a, $F-b).
#   va ARGS / vb ARGS   vfab on machine A / B (only the network namespace changes)
#   machines_add        makes both machines; machines_del takes down their
#                       fabrics and removes them (also what a crashed run left)
#   machine NS          a machine's own addresses and routes
#   machines_up CONFIG  `vfab up --host hosta|hostb CONFIG` on each
#   machines_down BEFORE  `vfab down` on each; machine A as BEFORE (machine)
HA=vfabt-$F-hosta HB=vfabt-$F-hostb

va() { nsenter --net="/run/netns/$HA" "$VFAB" --fabric "$F-a" "$@"; }
vb() { nsenter --net="/run/netns/$HB" "$VFAB" --fabric "$F-b" "$@"; }
# A machine's own addresses and routes (a fresh IPv6 link-local loses "tentative").
machine() { ip -n "$1" -o addr | sed 's/ tentative//'; ip -n "$1" route; ip -n "$1" -6 route; }

machines_del()
{
	[ -e "/run/netns/$HA" ] && { va down >/dev/null 2>&1 || true; }
	[ -e "/run/netns/$HB" ] && { vb down >/dev/null 2>&1 || true; }
	ip netns del "$HA" 2>/dev/null || true
	ip netns del "$HB" 2>/dev/null || true
}

machines_add()
{
	local h
	for h in "$HA" "$HB"; do
		if [ -e "/run/netns/$h" ]; then
			note "a previous run left $h behind; removing it"
			machines_del
		fi
	done
	ip netns add "$HA"
	ip netns add "$HB"
	ip -n "$HA" link add eth1 mtu 9000 type veth peer name eth1 mtu 9000 netns "$HB"
	for h in "$HA" "$HB"; do
		ip -n "$h" link set lo up
		ip -n "$h" link set eth1 up
	done
}

machines_up()
{
	va up --host hosta "$1" >"$VFAB_TMP/upa" 2>&1 ||
		{ show "$VFAB_TMP/upa"; fail "vfab up --host hosta failed"; }
	vb up --host hostb "$1" >"$VFAB_TMP/upb" 2>&1 ||
		{ show "$VFAB_TMP/upb"; fail "vfab up --host hostb failed"; }
}

machines_down()
{
	va down >/dev/null || fail "vfab down on hosta failed"
	vb down >/dev/null || fail "vfab down on hostb failed"
	[ "$(ip -n "$HA" -o link | wc -l)" = 2 ] || { ip -n "$HA" link; fail "hosta kept a netdev"; }
	[ "$(machine "$HA")" = "$1" ] || fail "hosta's addresses or routes changed"
	if ls /run/netns | grep "^vfab-$F-" >/dev/null; then fail "namespaces of $F-a/$F-b are left"; fi
}

# on NODE CMD...: CMD in NODE (a0, a1 on machine A; b0, b1 on B).
on()
{
	local n=$1
	shift
	case $n in
	a*) va exec "$n" -- "$@" ;;
	*) vb exec "$n" -- "$@" ;;
	esac
}

# between PORT SERVER CLIENT TOOL [ARGS...]: TOOL's server in node SERVER, its
# client in CLIENT connecting to SERVER by name; both must exit 0. Their
# output: $VFAB_TMP/x.srv and $VFAB_TMP/x.cli.
between()
{
	local port=$1 srv=$2 cli=$3 spid rc=0 src=0
	shift 3
	on "$srv" timeout 120 "$@" -p "$port" >"$VFAB_TMP/x.srv" 2>&1 &
	spid=$!
	VFAB_SERVER_PIDS+=("$spid")
	for _ in $(seq 100); do
		on "$srv" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	on "$cli" timeout 120 "$@" -p "$port" "$srv" >"$VFAB_TMP/x.cli" 2>&1 || rc=$?
	wait "$spid" || src=$?
	[ "$rc" = 0 ] && [ "$src" = 0 ] ||
		{ show "$VFAB_TMP/x.srv" "$VFAB_TMP/x.cli"; fail "$1 $cli -> $srv: client exited $rc, server $src"; }
}
