#!/usr/bin/env bash
# End-to-end test of `etcd-recipes value get|set|cas|watch` and
# `etcd-recipes group join|list`.
#
#   bash tests/cli/value_group_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd on free loopback ports, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=value-group-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

# --- usage --------------------------------------------------------------------------

for args in "value" "value get" "value set v" "value cas v 1" "value cas v -1 x" "value get v/" \
  "group" "group join g" "group join g a/b" "group join g/ a" "group list"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run value cas --help
check "value cas --help documents exit 1 on a stale version" eval '((RC == 0)) && [[ $OUT == *"was not EXPECTED"* ]]'

# --- value ----------------------------------------------------------------------------

run value get t/v
check "an absent value prints 0" eval '((RC == 0)) && [[ $OUT == 0 ]]'
run value set t/v hello
check "set prints the new version and the value" eval '((RC == 0)) && [[ $OUT =~ ^[0-9]+\ hello$ ]]'
read -r rev _ <<<"$OUT"
run value get t/v
check "get prints the same version and value" eval '((RC == 0)) && [[ $OUT == "$rev hello" ]]'
run value cas t/v "$rev" world
check "cas against the version read stores the value" eval '((RC == 0)) && [[ $OUT =~ ^[0-9]+\ world$ ]]'
run value cas t/v "$rev" again
check "cas against a stale version exits 1, says the version, prints what is there" \
  eval '((RC == 1)) && [[ $ERR == *"not $rev (nothing written)"* && $OUT == *" world" ]]'
run kv get t/v
check "a failed cas wrote nothing" eval '[[ $OUT == *world* && $OUT != *again* ]]'
run value cas t/new 0 first
check "cas 0 creates an absent key" eval '((RC == 0)) && [[ $OUT == *" first" ]]'
run value cas t/new 0 second
check "cas 0 on an existing key exits 1" eval '((RC == 1))'
run -w json value get t/new
check "get -w json: base64 value and versions" \
  eval '((RC == 0)) && [[ $OUT == *"\"exists\":true"* && $OUT == *"\"value\":\"Zmlyc3Q=\""* && $OUT == *"\"version\":1"* ]]'
run -w json value cas t/new 1 x
check "cas -w json says swapped false" eval '((RC == 1)) && [[ $OUT == *"\"swapped\":false"* ]]'
run value set t/sp "a b"
check "a value with a space is one simple field" eval '((RC == 0)) && [[ $OUT == *" a\\x20b" ]]'

spawn watch value watch t/w
WATCH=$PID
wait_until 15 lines_at_least "$WORK/watch.out" 1
check "watch prints the state first (absent: 0)" eval '[[ $(head -1 "$WORK/watch.out") == 0 ]]'
"$BIN" --endpoints "$EP" value set t/w one >/dev/null
"$BIN" --endpoints "$EP" kv put t/w two >/dev/null
"$BIN" --endpoints "$EP" kv del t/w >/dev/null
wait_until 15 lines_at_least "$WORK/watch.out" 4
check "watch prints each change: set, a raw put, a delete" \
  eval '[[ $(sed -n 2p "$WORK/watch.out") == *" one" && $(sed -n 3p "$WORK/watch.out") == *" two" && $(sed -n 4p "$WORK/watch.out") == 0 ]]'
kill -TERM "$WATCH"
finish "$WATCH" watch
check "watch ends with 0 on SIGTERM" eval '((RC == 0))'

# --- group ----------------------------------------------------------------------------

spawn member group join t/g a pa -- sh -c 'echo "$ETCD_RECIPES_GROUP_MEMBER_KEY" >>"$0"; while [ ! -f "$1" ]; do sleep 0.05; done; exit 3' \
  "$WORK/member.log" "$WORK/member.stop"
MEMBER=$PID
wait_until 15 file_has "$WORK/member.log" t/g/a
check "CMD runs with ETCD_RECIPES_GROUP_MEMBER_KEY" eval 'file_has "$WORK/member.log" t/g/a'
spawn holder group join t/g b
HOLDER=$PID
wait_until 15 keys_are t/g/b 1
"$BIN" --endpoints "$EP" kv put t/g/a/deep x >/dev/null
run group list t/g
check "list prints ID PAYLOAD per member, in id order, no deeper keys" \
  eval '((RC == 0)) && [[ $OUT == "a pa"$'"'"'\n'"'"'"b " ]]'
run -w json group list t/g
check "list -w json: base64 ids and payloads, leases" \
  eval '((RC == 0)) && [[ $OUT == *"\"id\":\"YQ==\""* && $OUT == *"\"payload\":\"cGE=\""* && $OUT == *"\"lease\":"* ]]'
"$BIN" --endpoints "$EP" kv del t/g/a/deep >/dev/null
run group join t/g a other -- touch "$WORK/not-run"
check "an id someone has: exit 1, CMD not run, not overwritten" \
  eval '((RC == 1)) && [[ ! -e $WORK/not-run ]] && [[ $("$BIN" --endpoints "$EP" kv get t/g/a) == *pa* ]]'
touch "$WORK/member.stop"
finish "$MEMBER" member
check "CMD exits: exit with its status, the member left at once" eval '((RC == 3)) && keys_are t/g/a 0'
kill -TERM "$HOLDER"
finish "$HOLDER" holder
check "without CMD: SIGTERM leaves, exit 0" eval '((RC == 0)) && keys_are t/g/b 0'
run group list t/g
check "an empty group lists nothing" eval '((RC == 0)) && [[ -z $OUT ]]'

echo "$passed passed, $failed failed"
((failed == 0))
