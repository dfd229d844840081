#!/usr/bin/env bash
# End-to-end test of `etcd-recipes reap PREFIX`: the bookkeeping keys that
# crashed processes left are reaped, those of live ones never.
#
#   bash tests/cli/reap_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH) on free
# loopback ports; exits 1 if anything failed, 77 if etcd cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=reap-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

for args in "reap" "reap a --idle bogus" "reap a --idle 0s"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run reap ""
check "an empty prefix is refused (exit 1), nothing read" eval '((RC == 1)) && [[ $ERR == *"must not be empty"* ]]'

# A producer key and a counter receipt as a crashed process leaves them
# (the layouts of include/etcd/recipes/queue.h and atomic_long.h).
run kv put app/jobs/producers/00000000000000aa 0000000000000001
run kv put app/hits 3
run kv put app/hits/receipts/host:1-00000000000000bb 0000000000000001
# A semaphore nobody uses any more (its count stays), and one in use.
run kv put app/old-sem/permits 2
spawn holder semaphore app/sem 1 -- sleep 60
HOLDER=$PID
wait_until 15 keys_are app/sem/holders/ 1
check "a live holder holds app/sem" eval 'keys_are app/sem/holders/ 1 && keys_are app/sem/permits 1'

run reap app/ --dry-run --idle 300ms
check "--dry-run reports what would go" \
  eval '((RC == 0)) && [[ $OUT == *"would reap app/jobs/producers/00000000000000aa queue producer"* ]] && [[ $OUT == *"would reap app/hits/receipts/host:1-00000000000000bb counter receipt"* ]]'
check "--dry-run removes nothing" keys_are app/jobs/producers/ 1

run reap app/ --idle 1s
check "reap removes the abandoned producer key, receipt and permit count" \
  eval '((RC == 0)) && keys_are app/jobs/producers/ 0 && keys_are app/hits/receipts/ 0 && keys_are app/old-sem/ 0 && [[ $ERR == *"3 of 4 "* ]]'
check "the permit count of a semaphore in use was kept, and says why" \
  eval '[[ $OUT == *"kept app/sem/permits semaphore permits (the semaphore has holders or waiters)"* ]] && keys_are app/sem/permits 1'
check "the counter's value is untouched" eval '[[ $("$BIN" --endpoints "$EP" counter get app/hits) == 3 ]]'
check "the holder still runs" alive "$HOLDER"
kill -TERM "$HOLDER" 2>/dev/null
finish "$HOLDER" holder

run -w json reap app/nothing --idle 10ms
check "-w json with nothing found" eval '((RC == 0)) && [[ $OUT == *"\"keys\":[]"* ]]'

echo "$passed passed, $failed failed"
((failed == 0))
