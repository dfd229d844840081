#!/usr/bin/env bash
# End-to-end test of `etcd-recipes view PREFIX` and `etcd-recipes node watch KEY`.
#
#   bash tests/cli/view_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=view-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

put() { "$BIN" --endpoints "$EP" kv put "$1" "$2" >/dev/null; }
del() { "$BIN" --endpoints "$EP" kv del "$1" >/dev/null; }
has_lines() { lines_at_least "$1" "$2"; }

# --- usage --------------------------------------------------------------------------

for args in "view" "view t/v extra" "node watch" "node" "view t/v --from-revision 0"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run view --help
check "view --help documents the line formats" \
  eval '((RC == 0)) && [[ $OUT == *"ADDED key value"* && $OUT == *"REMOVED key"* && $OUT == *"--snapshot"* ]]'

# --- view: snapshot, then changes ----------------------------------------------------------

put t/v/b 2
put t/v/a 1
put t/vx "a neighbour: t/v/ is the prefix"

spawn v view t/v/ --snapshot
V=$PID
wait_until 15 file_has "$WORK/v.err" "keys at revision"
check "--snapshot: the first read's keys, in key order, as ADDED lines" \
  eval 'cmp -s "$WORK/v.out" <(printf "ADDED t/v/a 1\nADDED t/v/b 2\n")'
check "stderr says when the first read is done" eval 'file_has "$WORK/v.err" "2 keys at revision"'
put t/v/a 1b
del t/v/b
put t/vx ignored
put t/v/c "x y"
wait_until 15 has_lines "$WORK/v.out" 5
check "then one line per change, in order; a neighbour is not followed" \
  eval 'cmp -s "$WORK/v.out" <(printf "ADDED t/v/a 1\nADDED t/v/b 2\nUPDATED t/v/a 1b\nREMOVED t/v/b\nADDED t/v/c x\\\\x20y\n")'
kill -TERM "$V"
finish "$V" v
check "SIGTERM: exit 0" eval '((RC == 0))'

# --- view --json, from now ---------------------------------------------------------------------

INTERRUPTIBLE=1 spawn vj view t/v/ --json
VJ=$PID
wait_until 15 file_has "$WORK/vj.out" INITIALIZED
put t/v/a 2
wait_until 15 has_lines "$WORK/vj.out" 2
if command -v python3 >/dev/null; then
  check "--json: INITIALIZED with the count (no ADDED without --snapshot), then UPDATED (base64)" \
    eval 'python3 -c "
import base64, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l[\"type\"] for l in lines] == [\"INITIALIZED\", \"UPDATED\"], lines
assert lines[0][\"keys\"] == 2
assert base64.b64decode(lines[1][\"value\"]).decode() == \"2\" and lines[1][\"revision\"] > lines[0][\"revision\"]
" "$WORK/vj.out"'
else
  check "--json" eval 'file_has "$WORK/vj.out" "\"type\":\"UPDATED\""'
fi
kill -INT "$VJ"
finish "$VJ" vj
check "SIGINT: exit 0" eval '((RC == 0))'

# --- node watch ---------------------------------------------------------------------------------

spawn n node watch t/v/n
N=$PID
wait_until 15 has_lines "$WORK/n.out" 1
put t/v/n 1
put t/v/n 2
del t/v/n
wait_until 15 has_lines "$WORK/n.out" 4
check "node watch: ABSENT, then CREATED, UPDATED, DELETED" \
  eval 'cmp -s "$WORK/n.out" <(printf "ABSENT t/v/n\nCREATED t/v/n 1\nUPDATED t/v/n 2\nDELETED t/v/n\n")'
kill -TERM "$N"
finish "$N" n
check "node watch, SIGTERM: exit 0" eval '((RC == 0))'

put t/v/m 5
INTERRUPTIBLE=1 spawn nj node watch t/v/m -w json
NJ=$PID
wait_until 15 has_lines "$WORK/nj.out" 1
check "node watch -w json: VALUE with the value (base64)" \
  eval 'file_has "$WORK/nj.out" "\"type\":\"VALUE\"" && file_has "$WORK/nj.out" "\"value\":\"NQ==\""'
kill -INT "$NJ"
finish "$NJ" nj

# --- a compacted --from-revision, no member answers -------------------------------------------

REV=$("$BIN" --endpoints "$EP" kv put t/v/r 1)
"$BIN" --endpoints "$EP" kv put t/v/r 2 >/dev/null
LAST=$("$BIN" --endpoints "$EP" kv put t/v/r 3)
"$BIN" --endpoints "$EP" kv compact "$LAST" >/dev/null
timeout -k 5 60 "$BIN" --endpoints "$EP" view t/v/ --from-revision "$REV" >"$WORK/out" 2>"$WORK/err"
RC=$?
ERR=$(cat "$WORK/err")
check "a compacted --from-revision: exit 1, saying so" eval '((RC == 1)) && [[ $ERR == *"compacted"* ]]'

timeout -k 5 60 "$BIN" --endpoints 127.0.0.1:1 --timeout 1s view t/v/ >"$WORK/out" 2>"$WORK/err"
RC=$?
ERR=$(cat "$WORK/err")
check "no member answers: exit 1 with the cause" eval '((RC == 1)) && [[ $ERR == *"view t/v/"* ]]'

echo "$passed passed, $failed failed"
((failed == 0))
