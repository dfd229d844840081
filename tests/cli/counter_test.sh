#!/usr/bin/env bash
# End-to-end test of `etcd-recipes counter get`, `add`, `set` and `cas`.
#
#   bash tests/cli/counter_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd on free loopback ports, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=counter-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

# --- usage --------------------------------------------------------------------------

for args in "counter" "counter get" "counter add c" "counter add c x" "counter set c" "counter cas c 1" \
  "counter get c/" "counter add c 9223372036854775808"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run counter cas --help
check "counter cas --help documents exit 1 on a mismatch" eval '((RC == 0)) && [[ $OUT == *"did not hold EXPECTED"* ]]'

# --- get, add, set, cas ---------------------------------------------------------------

run counter get t/c
check "an absent counter reads 0" eval '((RC == 0)) && [[ $OUT == 0 ]]'
run counter add t/c 5
check "add prints the committed value" eval '((RC == 0)) && [[ $OUT == 5 ]]'
run counter add t/c -7
check "add of a negative number subtracts" eval '((RC == 0)) && [[ $OUT == -2 ]]'
run kv get t/c
check "the value is decimal text in the key itself" eval '((RC == 0)) && [[ $OUT == *"-2"* ]]'
run kv put t/c 41
run counter add t/c 1
check "a raw put interoperates" eval '((RC == 0)) && [[ $OUT == 42 ]]'
run counter set t/c 100
check "set exits 0" eval '((RC == 0))'
run counter get t/c
check "get after set" eval '((RC == 0)) && [[ $OUT == 100 ]]'
run counter cas t/c 100 7
check "cas with the right EXPECTED stores NEW" eval '((RC == 0))'
run counter cas t/c 100 8
check "cas with a wrong EXPECTED exits 1 and says what it holds" \
  eval '((RC == 1)) && [[ $ERR == *"holds 7, not 100"* ]]'
run counter get t/c
check "a failed cas wrote nothing" eval '((RC == 0)) && [[ $OUT == 7 ]]'
run counter cas t/fresh 0 3
check "cas 0 on an absent counter stores NEW" eval '((RC == 0))'
run -w json counter add t/fresh 1
check "add -w json" eval '((RC == 0)) && [[ $OUT == "{\"value\":4}" ]]'

run kv put t/bad "+5"
run counter add t/bad 1
check "a value that is not a number is an error naming the key" \
  eval '((RC == 1)) && [[ $ERR == *decode_failed* && $ERR == *t/bad* ]]'
run counter set t/max 9223372036854775807
run counter add t/max 1
check "overflow is an error, nothing written" eval '((RC == 1)) && [[ $ERR == *"overflows int64"* ]]'
run counter get t/max
check "the value stayed" eval '[[ $OUT == 9223372036854775807 ]]'

# Concurrent adds from several processes: each prints its own value.
pids=()
for i in 1 2 3 4 5 6 7 8; do
  spawn "a$i" counter add t/race 1
  pids+=("$PID")
done
for i in 1 2 3 4 5 6 7 8; do finish "${pids[$((i - 1))]}" "a$i"; done
# shellcheck disable=SC2046
values=$(cat "$WORK"/a[1-8].out | sort -n | tr '\n' ' ')
run counter get t/race
check "8 concurrent adds print 1..8, each once" eval '[[ $values == "1 2 3 4 5 6 7 8 " && $OUT == 8 ]]'

# A short-lived add deletes its receipt on the way out (the client's close
# waits for the delete): ten runs leave none behind.
for i in $(seq 10); do run counter add t/short 1; done
check "10 short-lived adds end at 10" eval '((RC == 0)) && [[ $OUT == 10 ]]'
check "10 short-lived adds leave no receipt" keys_are t/short/receipts/ 0

echo "$passed passed, $failed failed"
((failed == 0))
