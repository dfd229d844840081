#!/usr/bin/env bash
# End-to-end test of `etcd-recipes lock` with several names (a multi-lock)
# and of cooperative release (`lock --revoke`, `--release-on-request`).
#
#   bash tests/cli/multi_lock_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (lib.sh), prints one PASS/FAIL line per check and
# "N passed, M failed"; exits 1 if anything failed, 77 if etcd cannot start.

# The commands run under the lock are sh -c scripts: expansions in single
# quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=multi-lock-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# max_concurrent LOG: the most commands that ran at once.
max_concurrent() { awk '$1 == "start" { if (++n > m) m = n } $1 == "end" { n-- } END { print m + 0 }' "$1"; }

start_etcd_or_skip

# --- usage ---------------------------------------------------------------------------

run lock m/a m/b
check "several names without -- are a usage error (exit 2), nothing taken" \
  eval '((RC == 2)) && [[ $ERR == *"--"* ]] && keys_are m/ 0'
run lock m/a m/b/ -- true
check "an invalid name among several: usage error" eval '((RC == 2))'
run lock m/a m/a/sub -- true
check "a name that is a path prefix of another: refused, nothing written" \
  eval '((RC == 1)) && [[ $ERR == *"path prefix"* ]] && keys_are m/ 0'
run lock --revoke m/a m/b --
check "--revoke takes one name" eval '((RC == 2))'

# --- several names as one ------------------------------------------------------------------

run lock m/b m/a -- sh -c 'echo "$ETCD_RECIPES_FENCING_TOKENS"; echo "$ETCD_RECIPES_LOCK_NAMES"; echo "$ETCD_RECIPES_LOCK_KEYS"; exit 4'
check "lock A B -- CMD: CMD gets every name's token, name and key (in sorted order) and its status is the exit status" \
  eval '((RC == 4)) && [[ $(sed -n 1p <<<"$OUT") =~ ^[1-9][0-9]*\ [1-9][0-9]*$ && $(sed -n 2p <<<"$OUT") == m/a && $(sed -n 3p <<<"$OUT") == m/b && $(sed -n 4p <<<"$OUT") == m/a/* && $(sed -n 5p <<<"$OUT") == m/b/* ]]'
check "the names were released after CMD" keys_are m/ 0

# Four at once, each with m/x and another name, in different orders: never two at once.
: >"$WORK/multi.log"
pids=()
orders=("m/x m/y" "m/y m/x" "m/z m/x" "m/x m/z")
for i in 0 1 2 3; do
  # shellcheck disable=SC2086  # word splitting intended
  spawn "multi$i" lock ${orders[$i]} -- sh -c 'echo start >>$0; sleep 0.2; echo end >>$0' "$WORK/multi.log"
  pids+=("$PID")
done
rcs=""
for i in 0 1 2 3; do
  finish "${pids[$i]}" "multi$i"
  rcs+="$RC "
done
OUT=$(cat "$WORK/multi.log")
check "4 multi-locks sharing a name in different orders: all ran, one at a time" \
  eval '[[ $rcs == "0 0 0 0 " ]] && (($(grep -c start "$WORK/multi.log") == 4)) && (($(max_concurrent "$WORK/multi.log") == 1))'

spawn holder lock m/p m/q --
wait_until 15 lines_at_least "$WORK/holder.out" 4
OUT=$(cat "$WORK/holder.out")
check "lock A B -- without CMD prints each name's key and token, and holds" \
  eval '[[ $(sed -n 1p <<<"$OUT") == m/p/* && $(sed -n 3p <<<"$OUT") == m/q/* ]] && keys_are m/p/ 1 && keys_are m/q/ 1'
run lock m/q --timeout 500ms -- true
check "a name held by a multi-lock: a plain lock on it times out (exit 3)" eval '((RC == 3))'
kill -TERM "$PID"
finish "$PID" holder
check "SIGTERM releases every name, exit 0" eval '((RC == 0)) && keys_are m/p/ 0 && keys_are m/q/ 0'

# Losing one name stops CMD, exit 75.
spawn lost lock m/l1 m/l2 -- sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' \
  "$WORK/lost.log"
wait_until 15 file_has "$WORK/lost.log" ready
"$BIN" --endpoints "$EP" kv del m/l2/ --prefix >/dev/null
finish "$PID" lost
check "a multi-lock losing one name: CMD gets SIGTERM, exit 75, the other name released" \
  eval '((RC == 75)) && file_has "$WORK/lost.log" "got TERM" && keys_are m/l1/ 0'

# --- cooperative release -------------------------------------------------------------------

run lock --revoke r/free
check "--revoke on a free lock: exit 1, says so" eval '((RC == 1)) && [[ $ERR == *"nobody holds"* ]]'

spawn polite lock r/x --release-on-request -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/polite.log"
polite=$PID
wait_until 15 file_has "$WORK/polite.log" ready
spawn next lock r/x -- sh -c 'echo next ran'
next=$PID
wait_until 15 keys_are r/x/ 2
run lock --revoke r/x
check "--revoke on a held lock: exit 0" eval '((RC == 0)) && [[ $ERR == *"asked the holder"* ]]'
finish "$polite" polite
check "--release-on-request: the holder's CMD gets SIGTERM, the lock is released, exit with CMD's status" \
  eval '((RC == 0)) && file_has "$WORK/polite.log" "got TERM" && [[ $ERR == *"asked to release"* ]]'
finish "$next" next
check "the waiting lock then runs its CMD" eval '((RC == 0)) && [[ $OUT == "next ran" ]] && keys_are r/x/ 0'

# Several names: a request for any one of them releases them all.
spawn polite_multi lock r/m1 r/m2 --release-on-request -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/polite_multi.log"
wait_until 15 file_has "$WORK/polite_multi.log" ready
run lock --revoke r/m2
check "--revoke on the second name of a multi-lock: exit 0" eval '((RC == 0))'
finish "$PID" polite_multi
check "lock A B --release-on-request: CMD stopped, both names released, exit with CMD's status" \
  eval '((RC == 0)) && file_has "$WORK/polite_multi.log" "got TERM" && [[ $ERR == *"asked to release"* ]] && keys_are r/m1/ 0 && keys_are r/m2/ 0'

spawn deaf lock r/y -- sh -c 'echo ready >>$0; sleep 1; echo done >>$0' "$WORK/deaf.log"
wait_until 15 file_has "$WORK/deaf.log" ready
run lock --revoke r/y
finish "$PID" deaf
check "without --release-on-request a request is only a request: CMD runs to its end" \
  eval '((RC == 0)) && file_has "$WORK/deaf.log" done'

echo "$passed passed, $failed failed"
((failed == 0))
