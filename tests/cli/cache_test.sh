#!/usr/bin/env bash
# End-to-end test of `etcd-recipes cache PREFIX`.
#
#   bash tests/cli/cache_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=cache-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

put() { "$BIN" --endpoints "$EP" kv put "$1" "$2" >/dev/null; }
del() { "$BIN" --endpoints "$EP" kv del "$1" >/dev/null; }
# has_lines FILE N: FILE has at least N lines.
has_lines() { lines_at_least "$1" "$2"; }

# --- usage --------------------------------------------------------------------------

for args in "cache" "cache /" "cache t/c extra"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run cache --help
check "cache --help documents the line formats" \
  eval '((RC == 0)) && [[ $OUT == *"ADDED key value"* && $OUT == *"REMOVED key"* && $OUT == *"--children"* ]]'

# --- snapshot, then changes ------------------------------------------------------------

put t/c/b 2
put t/c/a 1
put t/c/b/deep 3
put t/cx "a neighbour, not under t/c/"

spawn sub cache t/c/
SUB=$PID
wait_until 15 file_has "$WORK/sub.err" "keys at revision"
check "the initial snapshot: every key under PREFIX/, in key order, as ADDED lines" \
  eval 'cmp -s "$WORK/sub.out" <(printf "ADDED t/c/a 1\nADDED t/c/b 2\nADDED t/c/b/deep 3\n")'
check "stderr says when the snapshot is complete" eval 'file_has "$WORK/sub.err" "3 keys at revision"'

put t/c/a 1b
del t/c/b
put t/c/new "x y"
put t/cx ignored
put t/c/last z
wait_until 15 has_lines "$WORK/sub.out" 7
check "then one line per change, in order; a neighbour prefix is not followed" \
  eval 'cmp -s "$WORK/sub.out" <(printf "ADDED t/c/a 1\nADDED t/c/b 2\nADDED t/c/b/deep 3\nUPDATED t/c/a 1b\nREMOVED t/c/b\nADDED t/c/new x\\\\x20y\nADDED t/c/last z\n")'
kill -TERM "$SUB"
finish "$SUB" sub
check "SIGTERM: exit 0" eval '((RC == 0))'

# --- direct children, JSON, SIGINT ---------------------------------------------------------

INTERRUPTIBLE=1 spawn js cache t/c --children --json
JS=$PID
wait_until 15 file_has "$WORK/js.out" INITIALIZED
put t/c/a 2
wait_until 15 has_lines "$WORK/js.out" 5
if command -v python3 >/dev/null; then
  check "--children --json: ADDED objects (base64), INITIALIZED with the count, then changes; no deeper key" \
    eval 'python3 -c "
import base64, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
b = lambda s: base64.b64decode(s).decode()
assert [l[\"type\"] for l in lines] == [\"ADDED\", \"ADDED\", \"ADDED\", \"INITIALIZED\", \"UPDATED\"], lines
assert [b(l[\"key\"]) for l in lines[:3]] == [\"t/c/a\", \"t/c/last\", \"t/c/new\"], lines
assert b(lines[2][\"value\"]) == \"x y\" and lines[3][\"keys\"] == 3
assert b(lines[4][\"value\"]) == \"2\" and lines[4][\"revision\"] == lines[4][\"mod_revision\"] > lines[3][\"revision\"]
assert all(\"resync\" not in l for l in lines)
" "$WORK/js.out"'
else
  check "--children --json" eval 'file_has "$WORK/js.out" "\"type\":\"INITIALIZED\"" && ! file_has "$WORK/js.out" "dC9jL2IvZGVlcA=="'
fi
kill -INT "$JS"
finish "$JS" js
check "SIGINT: exit 0" eval '((RC == 0))'

# --- no member answers ------------------------------------------------------------------------

timeout -k 5 60 "$BIN" --endpoints 127.0.0.1:1 --timeout 1s cache t/c >"$WORK/out" 2>"$WORK/err"
RC=$?
ERR=$(cat "$WORK/err")
OUT=$(cat "$WORK/out")
check "no member answers: exit 1 with the cause" eval '((RC == 1)) && [[ $ERR == *"cache t/c"* ]]'

echo "$passed passed, $failed failed"
((failed == 0))
