#!/usr/bin/env bash
# rdma-core's own pyverbs test suite (Debian's python3-pyverbs ships it under
# /usr/share/doc/rdma-core/tests, partly gzipped) run inside node0 against
# mlx5_0, port 1, GID 3. Each test module runs in its own interpreter with a
# time limit, so one hanging test cannot hide the results of the others.
#
# Prints passed/failed/errors/skipped counts. Fails when a test fails or
# errors that tests/integration/pyverbs_expected.txt does not list
# ("test_id  # reason" per line); lists tests that are expected to fail but
# now pass, as a hint to shorten that file.
#
#   VFAB_PYVERBS_MODULE_TIMEOUT  seconds per module (default 150)
#   VFAB_PYVERBS_BUDGET          seconds for the whole suite (default 1080, under
#                                ctest's 20 min); modules left out count as errors
#   VFAB_PYVERBS_FILTER          regex: run only matching modules (debugging)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

src=/usr/share/doc/rdma-core/tests
expected=$(dirname "$0")/pyverbs_expected.txt
per_module=${VFAB_PYVERBS_MODULE_TIMEOUT:-150}
deadline=$(($(date +%s) + ${VFAB_PYVERBS_BUDGET:-1080}))
filter=${VFAB_PYVERBS_FILTER:-.}
# Debian's interpreter: the one python3-pyverbs is installed for.
python=/usr/bin/python3

[ -f "$src/run_tests.py" ] || fail "$src/run_tests.py missing (install python3-pyverbs)"
"$python" -c 'import pyverbs' || fail "$python cannot import pyverbs"

suite=$VFAB_TMP/tests
cp -r "$src" "$suite"
gunzip -f "$suite"/*.gz
results=$VFAB_TMP/results
: >"$results"

for mod in $(cd "$suite" && ls test_*.py | sed 's/\.py$//' | grep -E "$filter"); do
	log=$VFAB_TMP/$mod.log
	if [ $(($(date +%s) + per_module)) -gt "$deadline" ]; then
		echo "error tests.$mod.<module-not-run>" >>"$results"
		note "$mod: not run, the time budget is spent"
		continue
	fi
	rc=0
	# The node's /tmp is the host's, so the copied suite is visible there.
	timeout -k 10 "$per_module" "$VFAB" --fabric "$VFAB_FABRIC" exec node0 -- \
		"$python" "$suite/run_tests.py" --dev mlx5_0 --port 1 --gid 3 -v "$mod" \
		>"$log" 2>&1 || rc=$?
	"$python" - "$log" "$mod" "$rc" >>"$results" <<'PY'
# Failures come from unittest's failure headers ("FAIL: test_x (tests.mod.Cls.test_x)",
# "ERROR: setUpClass (tests.mod.Cls)"), which stand at line starts even when a test
# prints; the counts from its summary ("Ran N tests", "FAILED (failures=F, ...)").
import re, sys
log, mod, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(log, errors="replace").read()
for kind, name, where in re.findall(r"^(FAIL|ERROR): (\w+) \(([\w.]+)\)", text, re.M):
    if where.startswith("unittest."):
        tid = f"tests.{mod}.<import>"
    else:
        tid = where if where.endswith("." + name) else where + "." + name
    print(kind.lower(), tid)
ran = re.findall(r"^Ran (\d+) tests? in", text, re.M)
tail = re.findall(r"^(OK|FAILED)(?: \((.*)\))?$", text, re.M)
if ran and tail:
    n = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", tail[-1][1]))
    f = n.get("failures", 0) + n.get("unexpected_successes", 0)
    e = n.get("errors", 0)
    s = n.get("skipped", 0) + n.get("expected_failures", 0)
    print("ran", mod, ran[-1], max(0, int(ran[-1]) - f - e - s), f, e, s)
else:
    # Killed by the time limit or crashed: its tests have no verdict.
    print("error", f"tests.{mod}.<module-{'timeout' if rc == 124 else 'crash'}>")
PY
	note "$mod: exit $rc, $(grep -c . "$log") lines of output"
done

# Totals over the modules that completed ("ran MODULE RAN PASSED FAILED ERRORS SKIPPED").
read -r ran passed failures errors skipped <<<"$(awk '$1 == "ran" {
	for (i = 3; i <= 7; i++) t[i] += $i } END {print t[3] + 0, t[4] + 0, t[5] + 0, t[6] + 0, t[7] + 0}' \
	"$results")"
lost=$(awk '$1 == "error" && $2 ~ /<module-/' "$results" | wc -l)
echo
echo "pyverbs results: passed=$passed failed=$failures errors=$errors" \
	"skipped=$skipped (of $ran run; modules timed out or crashed: $lost)"

# Expected failures: first word of each non-comment line.
known=$(sed -e 's/#.*//' "$expected" | awk 'NF {print $1}' | sort -u)
broken=$(awk '$1 == "fail" || $1 == "error" {print $2}' "$results" | sort -u)
unexpected=$(comm -23 <(echo "$broken" | sed '/^$/d') <(echo "$known" | sed '/^$/d'))
# Listed tests of modules that completed and did not fail this time.
completed=$(awk '$1 == "ran" {print $2}' "$results")
now_pass=$(comm -23 <(echo "$known" | sed '/^$/d') <(echo "$broken" | sed '/^$/d') |
	while read -r tid; do
		m=$(echo "$tid" | cut -d. -f2)
		! grep -qx "$m" <<<"$completed" || echo "$tid"
	done)

if [ -n "$now_pass" ]; then
	echo "listed in pyverbs_expected.txt but not failing now (consider removing):"
	echo "$now_pass" | sed 's/^/  /'
fi
if [ -n "$unexpected" ]; then
	echo "failing and not listed in pyverbs_expected.txt:"
	echo "$unexpected" | sed 's/^/  /'
	echo "logs of the modules with unexpected failures:"
	for mod in $(echo "$unexpected" | cut -d. -f2 | sort -u); do
		show "$VFAB_TMP/$mod.log"
	done
	fail "$(echo "$unexpected" | wc -l) unexpected pyverbs failure(s)"
fi
[ "$passed" -gt 0 ] || fail "no pyverbs test passed at all"
note "no unexpected pyverbs failures"
