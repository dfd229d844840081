#!/usr/bin/env bash
# End-to-end test of `etcd-recipes discovery register|list|pick`.
#
#   bash tests/cli/discovery_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd on free loopback ports in a temporary directory (see
# lib.sh), runs the tool against it, and removes everything on exit. Prints
# one PASS/FAIL line per check and "N passed, M failed"; exits 1 if anything
# failed, 77 if etcd cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=discovery-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

list() { "$BIN" --endpoints "$EP" discovery list "$@" 2>/dev/null; }
listed() { [[ $(list "$1" | grep -c "^$1 $2 ") == 1 ]]; }
not_listed() { [[ $(list "$1" | grep -c "^$1 $2 ") == 0 ]]; }

# --- usage --------------------------------------------------------------------------

for args in "discovery register api" "discovery register api --address h" "discovery register a/b --address h --port 1" \
  "discovery register api --address h --port 70000" "discovery pick" "discovery list a/b" \
  "discovery pick api --strategy fastest"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run discovery register api --address h --port 1 --payload 'not json' -- true
check "a payload that is not JSON: usage error before any write" \
  eval '((RC == 2)) && [[ $ERR == *"not JSON"* ]] && keys_are /services/ 0'

# --- registered while CMD runs ------------------------------------------------------

spawn a1 discovery register api --id a1 --address 10.0.0.1 --port 8080 --payload '{"zone":"eu"}' -- \
  sh -c 'echo "$ETCD_RECIPES_SERVICE_ID" >>"$0"; while [ ! -f "$1" ]; do sleep 0.05; done; exit 4' \
  "$WORK/a1.log" "$WORK/a1.stop"
A1=$PID
wait_until 15 file_has "$WORK/a1.log" a1
check "CMD runs with ETCD_RECIPES_SERVICE_ID; the instance is listed" eval 'listed api a1'
run discovery list api
check "list: SERVICE ID ADDRESS:PORT" eval '((RC == 0)) && [[ $OUT == "api a1 10.0.0.1:8080" ]]'
run discovery list --json
check "list --json: the instance's JSON with its payload" \
  eval '((RC == 0)) && [[ $OUT == *"\"id\":\"a1\""* && $OUT == *"\"payload\":{\"zone\":\"eu\"}"* ]]'

run discovery register api --id a1 --address 10.0.0.9 --port 1 -- touch "$WORK/not-run"
check "an id someone else has: exit 1, CMD not run, the instance untouched" \
  eval '((RC == 1)) && [[ ! -e $WORK/not-run ]] && [[ $(list api) == "api a1 10.0.0.1:8080" ]]'
owner=$(sed -n 's/.*another owner (lease \([^,]*\),.*/\1/p' <<<"$ERR")
a1_lease=$("$BIN" --endpoints "$EP" -w json kv get /services/api/a1 | grep -o '"lease":"[0-9a-f]*"' | cut -d'"' -f4)
check "the message names the owner's lease in hex, as kv get -w json does" \
  eval '[[ -n $owner && -n $a1_lease && $((16#$owner)) == $((16#$a1_lease)) ]]'
run lease ttl "$owner"
check "lease ttl takes the lease id as the message printed it" eval '((RC == 0))'

spawn a2 discovery register api --id a2 --address 10.0.0.2 --port 8080 --ttl 2
A2=$PID
wait_until 15 lines_at_least "$WORK/a2.out" 1
check "without CMD: prints the instance" eval '[[ $(cat "$WORK/a2.out") == "api a2 10.0.0.2:8080" ]] && listed api a2'
spawn off discovery register api --id off --address 10.0.0.3 --port 8080 --disabled
OFF=$PID
wait_until 15 lines_at_least "$WORK/off.out" 1
check "a disabled instance is listed as such" eval '[[ $(list api | grep "^api off ") == "api off 10.0.0.3:8080 disabled" ]]'

run discovery pick api --strategy round-robin --count 4
check "pick --count 4 round-robin: alternates between the enabled ones" \
  eval '((RC == 0)) && [[ $OUT == $'"'"'10.0.0.1:8080\n10.0.0.2:8080\n10.0.0.1:8080\n10.0.0.2:8080'"'"' ]]'
run discovery pick api --strategy sticky --count 5
check "pick sticky: the same one each time" eval '((RC == 0)) && (($(sort -u <<<"$OUT" | wc -l) == 1))'
run discovery list
check "list without SERVICE: every service" eval '((RC == 0)) && (($(wc -l <<<"$OUT") == 3))'

# --- a killed registrant: gone after its TTL, never picked again ----------------------------

kill -KILL "$A2"
wait "$A2" 2>/dev/null
check "killed: still listed until its lease expires" eval 'listed api a2'
wait_until 20 not_listed api a2
check "killed: gone after --ttl (2 s)" eval 'not_listed api a2'
run discovery pick api --count 6 --strategy random
check "a removed instance is never picked" eval '((RC == 0)) && ! grep -q 10.0.0.2 <<<"$OUT"'

# --- CMD exits, signals ----------------------------------------------------------------------

touch "$WORK/a1.stop"
finish "$A1" a1
check "CMD exits: exit with CMD's status, the instance gone at once" eval '((RC == 4)) && not_listed api a1'

run discovery pick api
check "no instance to pick (only a disabled one): exit 1, says why" \
  eval '((RC == 1)) && [[ $ERR == *"no instance to pick"* && $ERR == *"1 disabled"* ]]'
run discovery pick nothing-here
check "an unknown service: exit 1" eval '((RC == 1))'

kill -TERM "$OFF"
finish "$OFF" off
check "without CMD: SIGTERM removes the instance, exit 0" eval '((RC == 0)) && keys_are /services/ 0'

run discovery register api --address 127.0.0.1 --port 1 -- sh -c 'exit 0'
check "the default id (HOSTNAME-PID) works; nothing is left behind" eval '((RC == 0)) && keys_are /services/ 0'

run discovery register api --id b --base /other --address h --port 2 -- sh -c 'etcd_out=$("$0" --endpoints "$1" discovery list --base /other); [ "$etcd_out" = "api b h:2" ]' "$BIN" "$EP"
check "--base: registered and listed under another base path" eval '((RC == 0)) && keys_are /other/ 0'

echo "$passed passed, $failed failed"
((failed == 0))
