#!/usr/bin/env bash
# End-to-end test of `etcd-recipes queue push`, `pop`, `size` and `remove`,
# and of `pqueue` (the priority queue).
#
#   bash tests/cli/queue_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=queue-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

# --- usage --------------------------------------------------------------------------

for args in "queue" "queue push" "queue push q" "queue push q/ x" "queue pop" "queue pop q --timeout bogus" \
  "queue pop q --count 0" "queue pop q --no-wait --timeout 1s" "queue size"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run queue pop --help
check "queue pop --help documents exit 3" eval '((RC == 0)) && [[ $OUT == *"no item within --timeout"* ]]'

# --- push, size, pop ---------------------------------------------------------------

run queue size t/q
check "size of an empty queue is 0" eval '((RC == 0)) && [[ $OUT == 0 ]]'
run queue push t/q one two
check "push prints the revision" eval '((RC == 0)) && [[ $OUT =~ ^[1-9][0-9]*$ ]]'
printf 'three' >"$WORK/in"
run queue push t/q - <"$WORK/in"
check "push - reads the value from standard input" eval '((RC == 0))'
run queue size t/q
check "size counts the items" eval '((RC == 0)) && [[ $OUT == 3 ]]'
run queue pop t/q
check "pop takes the oldest item" eval '((RC == 0)) && [[ $OUT == one ]]'
run queue pop t/q -n 2
check "pop -n 2 takes the next two in order" eval '((RC == 0)) && [[ $OUT == "two"$'"'"'\n'"'"'"three" ]]'
run queue pop t/q --timeout 300ms
check "pop --timeout on an empty queue exits 3" eval '((RC == 3)) && [[ -z $OUT && $ERR == *"no item within 300ms"* ]]'
run queue pop t/q --no-wait
check "pop --no-wait on an empty queue exits 3 at once" eval '((RC == 3)) && [[ $ERR == *"the queue is empty"* ]]'
run queue push t/q now
run queue pop t/q --no-wait
check "pop --no-wait takes an item that is there" eval '((RC == 0)) && [[ $OUT == now ]]'

# -w json: keys and values base64.
run -w json queue push t/q "a b"
check "push -w json gives the revision and the keys" \
  eval '((RC == 0)) && [[ $OUT =~ ^\{\"keys\":\[\"[A-Za-z0-9+/=]+\"\],\"revision\":[0-9]+\}$ ]]'
run -w json queue pop t/q
check "pop -w json gives the value in base64" eval '((RC == 0)) && [[ $OUT == "{\"value\":\"YSBi\"}" ]]'

# A parked pop is woken by a push from another process.
spawn popper queue pop t/q --timeout 20s
popper=$PID
sleep 0.3
check "pop waits while the queue is empty" alive "$popper"
run queue push t/q later
finish "$popper" popper
check "a waiting pop gets the pushed item" eval '((RC == 0)) && [[ $OUT == later ]]'

# Each item to exactly one of several concurrent pops.
pids=()
for i in 1 2 3 4; do
  spawn "p$i" queue pop t/race -n 5 --timeout 30s
  pids+=("$PID")
done
# shellcheck disable=SC2046  # one value per number
run queue push t/race $(seq 1 20)
rcs=""
for i in 1 2 3 4; do
  finish "${pids[$((i - 1))]}" "p$i"
  rcs+="$RC "
done
got=$(cat "$WORK"/p?.out | sort -n | tr '\n' ' ')
check "4 concurrent pops share 20 items, each exactly once" \
  eval '[[ $rcs == "0 0 0 0 " && $got == "$(seq 1 20 | tr "\n" " ")" ]]'

# An unreachable etcd: exit 1, not a wait.
timeout -k 5 60 "$BIN" --endpoints 127.0.0.1:1 --timeout 500ms queue pop t/q --timeout 10s >"$WORK/out" 2>"$WORK/err"
RC=$?
OUT=$(cat "$WORK/out")
ERR=$(cat "$WORK/err")
check "pop against an unreachable etcd exits 1" eval '((RC == 1))'
timeout -k 5 60 "$BIN" -v --endpoints 127.0.0.1:1 --timeout 500ms queue size t/q >"$WORK/out" 2>"$WORK/err"
RC=$?
ERR=$(cat "$WORK/err")
check "-v prints the client's retries on stderr, one line each" \
  eval '((RC == 1)) && [[ $ERR == *" info client[127.0.0.1:1]: Range: attempt 1 failed, retrying in "* ]]'

run queue size t/q
check "nothing is left in the queue" eval '((RC == 0)) && [[ $OUT == 0 ]]'

# A short-lived push deletes its producer key on the way out (the client's
# close waits for the delete): ten runs leave none behind.
for i in $(seq 10); do run queue push t/short x; done
check "10 short-lived pushes leave no producer key" keys_are t/short/producers/ 0

# --- remove -------------------------------------------------------------------------

run queue push t/rm --ids a b c
check "push --ids prints one id per item" eval '((RC == 0)) && (($(grep -c . <<<"$OUT") == 3)) && [[ $OUT != */* ]]'
mapfile -t ids <<<"$OUT"
run queue remove t/rm "${ids[1]}"
check "remove by id exits 0" eval '((RC == 0))'
run queue remove t/rm "${ids[1]}"
check "a second remove of it exits 3" eval '((RC == 3)) && [[ $ERR == *"no such item"* ]]'
run -w json queue remove t/rm "t/rm/items/${ids[2]}"
check "remove by the whole key, -w json" eval '((RC == 0)) && [[ $OUT == "{\"removed\":true}" ]]'
run queue pop t/rm -n 1 --no-wait
check "only the item not removed is delivered" eval '((RC == 0)) && [[ $OUT == a ]]'
run queue remove t/rm "${ids[0]}"
check "a popped item is not removed: exit 3" eval '((RC == 3))'
for bad in "a/b" "t/other/items/x"; do
  run queue remove t/rm "$bad"
  check "remove of '$bad' (no item of t/rm) exits 1" eval '((RC == 1)) && [[ $ERR == *"not an item id"* ]]'
done
run queue remove t/rm
check "remove without ID is a usage error" eval '((RC == 2))'

# Exactly one of a pop and a remove gets each item.
got_rm=0
got_pop=0
for i in $(seq 1 10); do
  run queue push t/race2 --ids "r$i"
  id=$OUT
  spawn "rp$i" queue pop t/race2 --no-wait
  pp=$PID
  run queue remove t/race2 "$id"
  rrc=$RC
  finish "$pp" "rp$i"
  if ((rrc == 0)) && ((RC == 3)); then
    got_rm=$((got_rm + 1))
  elif ((rrc == 3)) && ((RC == 0)) && [[ $OUT == "r$i" ]]; then
    got_pop=$((got_pop + 1))
  fi
done
check "10 races of pop and remove: each item to exactly one (removed $got_rm, popped $got_pop)" \
  eval '((got_rm + got_pop == 10))'
check "nothing left after the races" keys_are t/race2/items/ 0

# --- pqueue ---------------------------------------------------------------------------

for args in "pqueue push q" "pqueue push q 70000 x" "pqueue push q -1 x" "pqueue push q low x" "pqueue pop"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
check "a refused pqueue push writes nothing" keys_are q/ 0
run pqueue push t/pq 10 low1 low2
check "pqueue push prints the revision" eval '((RC == 0)) && [[ $OUT =~ ^[1-9][0-9]*$ ]]'
run pqueue push t/pq 0 urgent
run pqueue push t/pq --ids 5 mid
mid_id=$OUT
run pqueue size t/pq
check "pqueue size counts every priority" eval '((RC == 0)) && [[ $OUT == 4 ]]'
run pqueue remove t/pq "$mid_id"
check "pqueue remove by id" eval '((RC == 0))'
run pqueue pop t/pq -n 3 --timeout 10s
check "pqueue pop: the lowest priority first, then oldest first" \
  eval '((RC == 0)) && [[ $OUT == "urgent"$'"'"'\n'"'"'"low1"$'"'"'\n'"'"'"low2" ]]'
run pqueue pop t/pq --no-wait
check "pqueue pop --no-wait on an empty queue exits 3" eval '((RC == 3))'

echo "$passed passed, $failed failed"
((failed == 0))
