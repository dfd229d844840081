#!/usr/bin/env bash
# End-to-end test of `etcd-recipes inspect PREFIX`: real recipe state made
# by the tool itself (a held lock with a waiter, an election, a queue, a
# work queue with an item in flight and a dead letter, a barrier, a
# counter, a service, a transient key) read back in text and JSON.
#
#   bash tests/cli/inspect_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd on free loopback ports and removes everything on
# exit. One PASS/FAIL line per check, "N passed, M failed" at the end; exits
# 1 if anything failed, 77 if etcd cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=inspect-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

# --- usage and emptiness ---------------------------------------------------------------

run inspect
check "inspect without PREFIX is a usage error (exit 2)" eval '((RC == 2)) && [[ -n $ERR ]]'
run inspect /nothing
check "an empty prefix exits 0 and says so" eval '((RC == 0)) && [[ $OUT == "nothing under /nothing at revision "* ]]'

# --- recipe state, made by the tool ----------------------------------------------------

spawn holder lock /locks/orders --ttl 10 -- sleep 60
holder=$PID
wait_until 10 keys_are /locks/orders/ 1 || fail "the lock was not taken"
spawn waiter lock /locks/orders --ttl 10 -- true
waiter=$PID
wait_until 10 keys_are /locks/orders/ 2 || fail "the waiter did not queue"
spawn leader elect /e/billing --value node-2 -- sleep 60
leader=$PID
wait_until 10 keys_are /e/billing/ 1 || fail "no leader"

run queue push /q a b c
run workqueue push /wq w1 w2 w3
# The first item is held by a worker that sleeps; the dead letter comes from
# an item that fails with --max-deliveries 1 (it is dead-lettered when it comes up again).
spawn worker workqueue work /wq -n 1 --visibility 10 -- sh -c 'exec sleep 60'
worker=$PID
wait_until 10 keys_are /wq/claims/ 1 || fail "the worker did not claim an item"
run workqueue push /wq2 poison
run workqueue work /wq2 -n 1 --max-deliveries 1 --idle-exit 1s -- false
run workqueue work /wq2 -n 1 --max-deliveries 1 --idle-exit 1s -- false
wait_until 10 keys_are /wq2/dead/ 1 || fail "no dead letter"

run barrier set /b/gate
run counter add /c/hits 42
spawn svc discovery register api --id a1 --address 10.0.0.1 --port 8080 -- sleep 60
svc=$PID
wait_until 10 keys_are /services/api/ 1 || fail "the service was not registered"
spawn trans transient /t/busy job-42 -- sleep 60
trans=$PID
wait_until 10 keys_are /t/busy 1 || fail "no transient key"
run kv put /plain/k "some value"

# --- text --------------------------------------------------------------------------------

run inspect /locks/orders
check "a lock: its holder, token and lease TTL, and the waiter" \
  eval '((RC == 0)) && [[ $OUT == *"lock or election /locks/orders: held by \""*":"*"\" (lease "*", TTL "*"/10 s), token "*"; 1 waiting"* ]]'
check "the output states its revision" eval '[[ $OUT == "/locks/orders at revision "[0-9]*": 2 keys, 2 leases"* ]]'
run inspect /e
check "an election under a parent prefix: its leader's value" \
  eval '((RC == 0)) && [[ $OUT == *"lock or election /e/billing: held by \"node-2\" (lease "*"TTL "*"/"*" s), token "* ]]'
run inspect /q
check "a queue: depth and oldest item" eval '((RC == 0)) && [[ $OUT == *"queue /q: 3 items, oldest created at revision "* ]]'
run inspect /wq
check "a work queue: ready and in-flight items, with the claim's worker, attempt and visibility lease" \
  eval '((RC == 0)) && [[ $OUT == *"work queue /wq: 2 ready, 0 delayed, 1 in flight, 0 dead letters"* ]] &&
        [[ $OUT == *"in flight "*" claimed by \""*"\", attempt 1 (visibility lease "*", TTL "*"/10 s) \"w1\""* ]]'
run inspect /wq2
check "a dead letter with its reason" \
  eval '((RC == 0)) && [[ $OUT == *"0 in flight, 1 dead letter"* ]] && [[ $OUT == *"dead letter "*" after 1 delivery"* ]]'
run inspect /b/gate
check "a barrier: set, by whom" eval '((RC == 0)) && [[ $OUT == *"barrier /b/gate: set by \""*"\" at revision "* ]]'
run inspect /c
check "a counter" eval '((RC == 0)) && [[ $OUT == *"counter /c/hits: 42 "* ]]'
run inspect /services
check "services: instances with their endpoints and leases" \
  eval '((RC == 0)) && [[ $OUT == *"services /services: api: 1 instance"* ]] && [[ $OUT == *"api a1 10.0.0.1:8080 (lease "* ]]'
run inspect /t
check "a transient key" eval '((RC == 0)) && [[ $OUT == *"transient key /t/busy: \"job-42\" (lease "*", TTL "* ]]'
run inspect /plain
check "a plain key, as it is" eval '((RC == 0)) && [[ $OUT == *"key /plain/k: \"some value\""* ]]'
run inspect ""
check "every key at once: the revision line and one block per recipe (ten)" \
  eval '((RC == 0)) && (($(grep -c "^[a-z]" <<<"$OUT") == 11))'

# --- JSON ----------------------------------------------------------------------------------

if command -v python3 >/dev/null; then
  run -w json inspect /
  check "-w json: one document with the same facts" eval '((RC == 0)) && python3 -c "
import base64, json, sys
d = json.loads(sys.argv[1])
assert d[\"revision\"] > 0, d
r = {(x[\"kind\"], base64.b64decode(x[\"name\"]).decode()): x for x in d[\"recipes\"]}
lock = r[(\"lock_or_election\", \"/locks/orders\")]
assert lock[\"counts\"] == {\"holder\": 1, \"waiting\": 1}, lock
h = lock[\"entries\"][0]
assert h[\"role\"] == \"holder\" and h[\"token\"] == h[\"create_revision\"], h
assert len(h[\"lease\"][\"id\"]) == 16 and h[\"lease\"][\"granted_ttl\"] == 10 and 0 < h[\"lease\"][\"ttl\"] <= 10, h
e = r[(\"lock_or_election\", \"/e/billing\")]
assert base64.b64decode(e[\"entries\"][0][\"value\"]) == b\"node-2\", e
assert r[(\"queue\", \"/q\")][\"counts\"][\"item\"] == 3
wq = r[(\"work_queue\", \"/wq\")]
assert wq[\"counts\"][\"in_flight\"] == 1 and wq[\"counts\"][\"ready\"] == 2, wq
f = [x for x in wq[\"entries\"] if x[\"role\"] == \"in_flight\"][0]
assert f[\"deliveries\"] == 1 and base64.b64decode(f[\"payload\"]) == b\"w1\" and f[\"claim_lease\"][\"granted_ttl\"] == 10, f
assert r[(\"work_queue\", \"/wq2\")][\"counts\"][\"dead_letter\"] == 1
assert r[(\"counter\", \"/c/hits\")][\"value\"] == 42
assert (\"barrier\", \"/b/gate\") in r
s = r[(\"services\", \"/services\")][\"entries\"][0]
assert s[\"service\"] == \"api\" and s[\"endpoint\"] == \"10.0.0.1:8080\", s
assert (\"transient\", \"/t/busy\") in r and (\"key\", \"/plain/k\") in r
" "$OUT"'
  run inspect /nothing --json
  check "--json of nothing: an empty list of recipes" eval '((RC == 0)) && python3 -c "
import json, sys
d = json.loads(sys.argv[1]); assert d[\"recipes\"] == [] and d[\"revision\"] > 0, d
" "$OUT"'
fi

# --- a summary: many items counted, the head listed -----------------------------------------

# In pushes of 100 (one push is one transaction, within etcd's 128 operations).
for first in $(seq 1 100 1101); do
  # shellcheck disable=SC2046
  run queue push /big $(seq -f 'i%04g' "$first" $((first + 99)))
done
run inspect /big
check "a summary of a 1200-item queue: its exact depth and head in a few lines" \
  eval '((RC == 0)) && [[ $OUT == *"queue /big: 1200 items, oldest created at revision "* ]] &&
        [[ $OUT == *"item "*" \"i0001\" "* ]] && [[ $OUT == *"... and 1190 more (inspect --all lists every key)"* ]] &&
        (($(wc -l <<<"$OUT") <= 13))'
run inspect /big --all
check "--all lists every item" eval '((RC == 0)) && (($(grep -c "^  item " <<<"$OUT") == 1200))'
if command -v python3 >/dev/null; then
  run inspect /big -w json
  check "-w json of a summary: exact counts, the keys read, complete false" eval '((RC == 0)) && python3 -c "
import json, sys
d = json.loads(sys.argv[1]); q = d[\"recipes\"][0]
assert d[\"complete\"] is False and q[\"counts\"][\"item\"] == 1200 and len(q[\"entries\"]) < 1200, q[\"counts\"]
" "$OUT"'
fi

# --- an etcd failure -----------------------------------------------------------------------

"$BIN" --endpoints 127.0.0.1:1 --timeout 2s inspect /locks >"$WORK/out" 2>"$WORK/err"
RC=$?
ERR=$(cat "$WORK/err")
OUT=$(cat "$WORK/out")
check "no etcd: exit 1 with the cause" eval '((RC == 1)) && [[ $ERR == *"inspect /locks"* ]]'

for p in "$holder" "$waiter" "$leader" "$worker" "$svc" "$trans"; do kill -TERM "$p" 2>/dev/null; done
for p in "$holder" "$waiter" "$leader" "$worker" "$svc" "$trans"; do wait "$p" 2>/dev/null; done

echo "$passed passed, $failed failed"
((failed == 0))
