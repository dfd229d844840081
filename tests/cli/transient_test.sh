#!/usr/bin/env bash
# End-to-end test of `etcd-recipes transient KEY VALUE -- CMD`.
#
#   bash tests/cli/transient_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=transient-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

value_of() { "$BIN" --endpoints "$EP" kv get "$1" 2>/dev/null; }

# --- usage --------------------------------------------------------------------------

for args in "transient" "transient t/k" "transient t/k/ v -- true" "transient t/k v --ttl 0 -- true"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run transient --help
check "transient --help documents exit 1 for a held key" eval '((RC == 0)) && [[ $OUT == *"held by another owner"* ]]'

# --- the key lives with CMD ---------------------------------------------------------

# CMD says it is ready, then exits 4 once $WORK/live.stop exists.
spawn live transient t/live hello -- \
  sh -c 'echo ready >>"$0"; while [ ! -f "$1" ]; do sleep 0.05; done; exit 4' "$WORK/live.log" "$WORK/live.stop"
LIVE=$PID
wait_until 15 file_has "$WORK/live.log" ready
check "the key exists with VALUE while CMD runs" eval '[[ $(value_of t/live) == hello ]]'

run transient t/live other -- touch "$WORK/not-run"
check "a key held by another owner: exit 1, CMD not run, the key untouched" \
  eval '((RC == 1)) && [[ $ERR == *"held by another owner"* && $ERR == *"not run"* ]] && [[ ! -e $WORK/not-run ]] && [[ $(value_of t/live) == hello ]]'
owner=$(sed -n 's/.*another owner (lease \([^,]*\),.*/\1/p' <<<"$ERR")
live_lease=$("$BIN" --endpoints "$EP" -w json kv get t/live | grep -o '"lease":"[0-9a-f]*"' | cut -d'"' -f4)
check "the message names the owner's lease in hex, as kv get -w json does" \
  eval '[[ -n $owner && $((16#$owner)) == $((16#$live_lease)) ]]'
run lease ttl "$owner"
check "lease ttl takes the lease id as the message printed it" eval '((RC == 0))'

touch "$WORK/live.stop"
finish "$LIVE" live
check "CMD exits: exit with CMD's status, the key gone at once" eval '((RC == 4)) && keys_are t/live 0'

"$BIN" --endpoints "$EP" kv put t/plain "operator's" >/dev/null
run transient t/plain mine -- touch "$WORK/not-run"
check "a plain key (no lease) is another owner's: exit 1, not overwritten" \
  eval '((RC == 1)) && [[ ! -e $WORK/not-run ]] && [[ $(value_of t/plain) == "operator'"'"'s" ]]'

run transient t/env v -- sh -c 'echo "$ETCD_RECIPES_TRANSIENT_KEY"'
check "CMD gets ETCD_RECIPES_TRANSIENT_KEY; exit 0; nothing left" eval '((RC == 0)) && [[ $OUT == t/env ]] && keys_are t/env 0'

# --- signals ------------------------------------------------------------------------

spawn sig transient t/sig x -- sh -c 'trap "kill \$!; echo got TERM >>$0; exit 7" TERM; echo ready >>$0; sleep 30 & wait' \
  "$WORK/sig.log"
SIG=$PID
wait_until 15 file_has "$WORK/sig.log" ready
check "the key exists while CMD runs (signal case)" eval '[[ $(value_of t/sig) == x ]]'
kill -TERM "$SIG"
finish "$SIG" sig
check "SIGTERM: passed on to CMD, exit with CMD's status, the key removed" \
  eval '((RC == 7)) && file_has "$WORK/sig.log" "got TERM" && keys_are t/sig 0'

spawn nocmd transient t/nocmd v
NOCMD=$PID
wait_until 15 lines_at_least "$WORK/nocmd.out" 2
check "without CMD: prints the key and its create revision" \
  eval '[[ $(head -1 "$WORK/nocmd.out") == t/nocmd ]] && [[ $(value_of t/nocmd) == v ]]'
kill -TERM "$NOCMD"
finish "$NOCMD" nocmd
check "without CMD: SIGTERM removes the key, exit 0" eval '((RC == 0)) && keys_are t/nocmd 0'

# --- nothing left behind ---------------------------------------------------------------------------

OUT=$("$BIN" --endpoints "$EP" kv get --prefix t/ --keys-only)
check "no transient keys are left behind (only t/plain)" eval '[[ $OUT == t/plain ]]'

echo "$passed passed, $failed failed"
((failed == 0))
