#!/usr/bin/env bash
# End-to-end test of `etcd-recipes workqueue push`, `work -- CMD`, `size`,
# `dead-letters`, `requeue-dead` and `purge-dead`.
#
#   bash tests/cli/workqueue_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016,SC2034

set -u

TEST_NAME=workqueue-test
POLL_INTERVAL=0.02
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

now_ms() { date +%s%3N; }
size_is() { [[ $("$BIN" --endpoints "$EP" workqueue size "$1" 2>/dev/null) == "$2" ]]; }
# The id of the first item pushed by the last `run -w json workqueue push`.
first_id() { grep -o '"keys":\["[^"]*"' <<<"$OUT" | cut -d'"' -f4 | base64 -d | sed 's|.*/||'; }

start_etcd_or_skip

# --- usage --------------------------------------------------------------------------

for args in "workqueue" "workqueue push" "workqueue push q" "workqueue push q/ x" "workqueue push q x --delay bogus" \
  "workqueue work" "workqueue work q" "workqueue work q --visibility 0 -- true" \
  "workqueue work q --max-deliveries 0 -- true" "workqueue work q --idle-exit bogus -- true" \
  "workqueue work q --count 0 -- true" "workqueue size" "workqueue dead-letters" "workqueue requeue-dead q" \
  "workqueue requeue-dead q a/b" "workqueue purge-dead q" "workqueue purge-dead q/ x"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run workqueue work q sh -c true
check "work without -- before CMD: exit 2 with a hint" eval '((RC == 2)) && [[ $ERR == *"put -- before"* ]]'
run workqueue work --help
check "work --help documents the environment and exit 3" \
  eval '((RC == 0)) && [[ $OUT == *ETCD_RECIPES_ITEM_ID* && $OUT == *ETCD_RECIPES_ATTEMPT* && $OUT == *"  3 "* ]]'

# --- push, size, work ---------------------------------------------------------------

run workqueue size t/wq
check "size of an empty work queue is 0" eval '((RC == 0)) && [[ $OUT == 0 ]]'
run -w json workqueue push t/wq one "two words"
check "push -w json gives the revision and the keys" \
  eval '((RC == 0)) && [[ $OUT =~ ^\{\"keys\":\[\"[A-Za-z0-9+/=]+\",\"[A-Za-z0-9+/=]+\"\],\"revision\":[0-9]+\}$ ]]'
id1=$(first_id)
printf 'line 1\nline 2\n' >"$WORK/in"
run workqueue push t/wq - <"$WORK/in"
check "push - reads the value from standard input, prints the revision" eval '((RC == 0)) && [[ $OUT =~ ^[1-9][0-9]*$ ]]'
run workqueue size t/wq
check "size counts the items" eval '((RC == 0)) && [[ $OUT == 3 ]]'

# CMD records its environment and its standard input, one file per item.
record='n=$(ls "$0" | wc -l); { echo "$ETCD_RECIPES_ITEM_ID"; echo "$ETCD_RECIPES_ATTEMPT"; echo "$ETCD_RECIPES_ITEM_KEY"; } >"$0/env.$n"; cat >"$0/in.$n"'
mkdir -p "$WORK/rec"
run workqueue work t/wq -n 3 -- sh -c "$record" "$WORK/rec"
check "work -n 3: exit 0 after three items, each acked, one line each on stderr" \
  eval '((RC == 0)) && (($(grep -c ": done, acked" <<<"$ERR") == 3)) && [[ -z $OUT ]]'
check "CMD gets the value on stdin, the id, the attempt and the key in its environment, oldest first" \
  eval '[[ $(cat "$WORK/rec/in.0") == one && $(cat "$WORK/rec/in.2") == "two words" ]] &&
        cmp -s "$WORK/rec/in.4" "$WORK/in" &&
        [[ $(sed -n 1p "$WORK/rec/env.0") == "$id1" && $(sed -n 2p "$WORK/rec/env.0") == 1 &&
           $(sed -n 3p "$WORK/rec/env.0") == "t/wq/items/$id1" ]]'
check "acked items are gone" size_is t/wq 0

# -w json: one JSON object per item, on stderr (stdout is CMD's).
run workqueue push t/wq j
run -w json workqueue work t/wq -n 1 -- sh -c 'echo out'
check "-w json: a JSON report per item on stderr, CMD's output on stdout" \
  eval '((RC == 0)) && [[ $OUT == out && $ERR =~ \"result\":\"acked\" && $ERR =~ \"attempt\":1 ]]'

# --idle-exit: nothing to do.
start=$(now_ms)
run workqueue work t/wq --idle-exit 300ms -- true
took=$(($(now_ms) - start))
check "--idle-exit 300ms on an empty queue: exit 0 soon (took ${took} ms)" eval '((RC == 0 && took < 5000))'
run workqueue work t/wq --idle-exit 300ms -n 1 -- true
check "--idle-exit before --count items: exit 3" eval '((RC == 3)) && [[ $ERR == *"no item within 300ms"* ]]'

# --- failures, dead letters -----------------------------------------------------------

run -w json workqueue push t/fail bad
bad_id=$(first_id)
run workqueue work t/fail --max-deliveries 2 --idle-exit 1s -- sh -c 'echo "$ETCD_RECIPES_ATTEMPT" >>"$0"; exit 4' \
  "$WORK/fail.rec"
check "non-zero exit requeues: CMD ran for attempts 1 and 2, then the item went to the dead letters" \
  eval '((RC == 0)) && [[ $(tr "\n" " " <"$WORK/fail.rec") == "1 2 " ]] && (($(grep -c "exited 4: requeued" <<<"$ERR") == 2))'
check "the dead item is not in the queue any more" size_is t/fail 0
check "the worker said on stderr that it moved the item to the dead letters" \
  eval '[[ $ERR == *"item $bad_id moved to the dead letters after 2 deliveries (delivered 2 times"* ]]'
run workqueue dead-letters t/fail
check "dead-letters lists it: id, 2 deliveries, its value" \
  eval '((RC == 0)) && [[ $(sed -n 1p <<<"$OUT") == ID* && $(sed -n 2p <<<"$OUT") =~ ^$bad_id\ +2\ .*bad$ ]]'
run -w json workqueue dead-letters t/fail
check "dead-letters -w json: an array with id, value base64, deliveries" \
  eval '((RC == 0)) && [[ $OUT == "[{"* && $OUT == *"\"id\":\"$bad_id\""* && $OUT == *"\"value\":\"YmFk\""* && $OUT == *"\"deliveries\":2"* ]]'
run workqueue dead-letters t/fail --json
check "dead-letters --json is -w json" eval '((RC == 0)) && [[ $OUT == "[{"* ]]'

run workqueue requeue-dead t/fail "$bad_id"
check "requeue-dead: exit 0, the item is back in the queue" eval '((RC == 0)) && size_is t/fail 1'
run workqueue dead-letters t/fail
check "requeue-dead: no dead letter left" eval '((RC == 0)) && [[ -z $OUT ]]'
run workqueue work t/fail -n 1 -- sh -c 'echo "$ETCD_RECIPES_ATTEMPT" >"$0"; cat >>"$0"' "$WORK/again.rec"
check "a requeued dead letter is delivered again, its deliveries counted from 0 (attempt 1)" \
  eval '((RC == 0)) && [[ $(tr "\n" " " <"$WORK/again.rec") == "1 bad" ]] && size_is t/fail 0'
run workqueue requeue-dead t/fail "$bad_id"
check "requeue-dead of an id that is not a dead letter: exit 1, named" \
  eval '((RC == 1)) && [[ $ERR == *"no dead letter $bad_id"* ]]'

run -w json workqueue push t/fail poison
poison_id=$(first_id)
run -w json workqueue work t/fail --max-deliveries 1 --idle-exit 1s -- false
check "-w json: the dead-lettering is a JSON report on stderr too" \
  eval '[[ $ERR == *"{\"deliveries\":1,\"id\":\"$poison_id\",\"reason\":\"delivered 1 times"*"\"result\":\"dead-lettered\"}"* ]]'
run workqueue dead-letters t/fail
check "--max-deliveries 1: one failed delivery makes a dead letter" eval '[[ $OUT == *"$poison_id"*poison* ]]'
run workqueue purge-dead t/fail "$poison_id"
check "purge-dead: exit 0, the dead letter is gone, nothing is back in the queue" \
  eval '((RC == 0)) && keys_are t/fail/dead/ 0 && size_is t/fail 0'
run workqueue purge-dead t/fail "$poison_id"
check "purge-dead of an id that is not a dead letter: exit 1, named" \
  eval '((RC == 1)) && [[ $ERR == *"no dead letter $poison_id"* ]]'

# --- delays ---------------------------------------------------------------------------

pushed=$(now_ms)
run workqueue push t/delay later --delay 2s
run workqueue work t/delay -n 1 --idle-exit 1s -- true
check "a delayed item is not received before its time (--idle-exit 1s: exit 3)" eval '((RC == 3))'
run workqueue work t/delay -n 1 -- sh -c 'date +%s%3N >"$0"' "$WORK/delay.at"
at=$(cat "$WORK/delay.at" 2>/dev/null || echo 0)
check "the delayed item is received 2 s after its push, not before (after $((at - pushed)) ms)" \
  eval '((RC == 0 && at - pushed >= 2000 && at - pushed < 5000))'

# --- a signal while CMD runs ------------------------------------------------------------

# CMD: a shell with a child; both must be gone, and the item back at once
# (far sooner than --visibility 60), to a worker that was already waiting.
run workqueue push t/sig job
spawn sigA workqueue work t/sig --visibility 60 -- sh -c 'echo $$ >"$0"; sleep 100 & wait' "$WORK/sig.pgid"
sig_a=$PID
wait_until 15 eval '[[ -s $WORK/sig.pgid ]] && pgrep -P "$(cat "$WORK/sig.pgid")" >/dev/null'
sig_pgid=$(cat "$WORK/sig.pgid")
spawn sigB workqueue work t/sig -n 1 --visibility 60 -- sh -c 'date +%s%3N >"$0"; cat >>"$0"' "$WORK/sig.b"
sig_b=$PID
sleep 0.5 # B is parked on an empty queue (A holds the item)
killed=$(now_ms)
kill -TERM "$sig_a"
finish "$sig_a" sigA
check "SIGTERM while CMD runs: exit 0, the item requeued, CMD's whole process group gone" \
  eval '((RC == 0)) && [[ $ERR == *"interrupted by SIGTERM"*requeued* ]] && ! group_alive "$sig_pgid"'
finish "$sig_b" sigB
got_at=$(head -1 "$WORK/sig.b" 2>/dev/null || echo 0)
check "the waiting worker gets the item at once ($((got_at - killed)) ms after the SIGTERM; --visibility 60)" \
  eval '((RC == 0 && got_at - killed < 3000)) && [[ $(sed -n 2p "$WORK/sig.b") == job ]]'

INTERRUPTIBLE=1 spawn idle workqueue work t/sig -- true
idle=$PID
sleep 0.5
kill -TERM "$idle"
finish "$idle" idle
check "SIGTERM while waiting for an item: exit 0" eval '((RC == 0))'

# --- a worker SIGKILLed while CMD runs ------------------------------------------------------

run workqueue push t/kill job
spawn killA workqueue work t/kill --visibility 2 -- sh -c 'echo $$ >"$0"; exec sleep 100' "$WORK/kill.pid"
kill_a=$PID
wait_until 15 eval '[[ -s $WORK/kill.pid ]]'
spawn killB workqueue work t/kill -n 1 --visibility 2 -- sh -c 'date +%s%3N >"$0"; echo "$ETCD_RECIPES_ATTEMPT" >>"$0"' \
  "$WORK/kill.b"
kill_b=$PID
sleep 0.3
killed=$(now_ms)
kill -KILL "$kill_a"
finish "$kill_b" killB
got_at=$(head -1 "$WORK/kill.b" 2>/dev/null || echo 0)
check "a SIGKILLed worker's item goes to another after about --visibility 2 ($((got_at - killed)) ms), attempt 2" \
  eval '((RC == 0 && got_at - killed >= 500 && got_at - killed < 4000)) && [[ $(sed -n 2p "$WORK/kill.b") == 2 ]]'
wait_until 2 eval '! alive "$(cat "$WORK/kill.pid")"'
check "the killed worker's CMD died with it (parent-death signal)" eval '! alive "$(cat "$WORK/kill.pid")"'

# --- the claim lost while CMD runs --------------------------------------------------------

# The worker's lease is revoked under it: CMD's group is stopped before the
# loss is reported, and the worker goes on (here: gets the item again).
run workqueue push t/lost job
spawn lost workqueue work t/lost -n 2 --visibility 3 -- \
  sh -c 'echo "$ETCD_RECIPES_ATTEMPT" >>"$0.rec"; echo $$ >"$0.$ETCD_RECIPES_ATTEMPT"; [ "$ETCD_RECIPES_ATTEMPT" = 1 ] || exit 0; sleep 100 & wait' \
  "$WORK/lost"
lost=$PID
wait_until 15 eval '[[ -s $WORK/lost.1 ]] && keys_are t/lost/claims/ 1'
lost_pgid=$(cat "$WORK/lost.1")
lease=$("$BIN" --endpoints "$EP" kv get --prefix t/lost/claims/ -w json | grep -o '"lease":"[0-9a-f]*"' | head -1 | cut -d'"' -f4)
"$BIN" --endpoints "$EP" lease revoke "$lease" >/dev/null
# When the loss is reported, the group must already be gone.
wait_until 15 file_has "$WORK/lost.err" "claim was lost"
gone_when_reported=1
group_alive "$lost_pgid" && gone_when_reported=0
finish "$lost" lost
check "claim lost while CMD runs: CMD's group stopped before the report, the worker goes on (attempt 2 acked)" \
  eval '((RC == 0 && gone_when_reported == 1)) && [[ $(tr "\n" " " <"$WORK/lost.rec") == "1 2 " ]] && (($(grep -c "done, acked" <<<"$ERR") == 1))'
check "nothing left in t/lost" size_is t/lost 0

# --- etcd stalls while CMD runs ---------------------------------------------------------------

# The only member is SIGSTOPped for 5 s (a GC pause, a disk stall) and CMD
# ends during the stall: the ack waits for etcd instead of failing.
run workqueue push t/stall x
spawn stall workqueue work t/stall --visibility 20 -n 1 -- sh -c 'sleep 2; echo ran >>"$0"' "$WORK/stall.ran"
stalled=$PID
wait_until 15 keys_are t/stall/claims/ 1
kill -STOP "$ETCD_PID"
sleep 5 # the stall itself
kill -CONT "$ETCD_PID"
finish "$stalled" stall
check "etcd stalls 5 s while CMD runs: the ack waits it out, exit 0, CMD ran once" \
  eval '((RC == 0)) && [[ $(wc -l <"$WORK/stall.ran") == 1 ]] && [[ $ERR == *"done, acked"* ]]'
check "the worker said once that etcd was not answering, and once that it answers again" \
  eval '(($(grep -c "etcd is not answering" <<<"$ERR") == 1 && $(grep -c "etcd answers again" <<<"$ERR") == 1))'
check "nothing left in t/stall" size_is t/stall 0

# --- etcd or CMD unusable -------------------------------------------------------------------

run workqueue push t/nf x
printf '#!/bin/sh\n' >"$WORK/not-executable"
chmod 644 "$WORK/not-executable"
for bad in /nonexistent/cmd no-such-program-anywhere "$WORK/not-executable" "$WORK"; do
  want=127
  [[ $bad == "$WORK"* ]] && want=126
  run workqueue work t/nf -- "$bad"
  check "CMD ${bad/#$WORK/WORK} cannot be run: exit $want, nothing received" \
    eval '((RC == want)) && [[ $ERR == *"cannot run $bad"*"no item was received"* ]] && size_is t/nf 1'
done
run workqueue work t/nf -n 1 -- sh -c 'echo "$ETCD_RECIPES_ATTEMPT" >"$0"' "$WORK/nf.attempt"
check "after the refused runs the item's first delivery is attempt 1 (none was counted)" \
  eval '((RC == 0)) && [[ $(cat "$WORK/nf.attempt") == 1 ]]'
start=$SECONDS
run workqueue work t/nf-empty -- /nonexistent/cmd
check "CMD not found, empty queue: exit 127 at once, not a wait for an item" \
  eval '((RC == 127 && SECONDS - start < 10))'
timeout -k 5 60 "$BIN" --endpoints 127.0.0.1:1 --timeout 500ms workqueue work t/nf -- true >"$WORK/out" 2>"$WORK/err"
RC=$?
OUT=$(cat "$WORK/out")
ERR=$(cat "$WORK/err")
check "work against an unreachable etcd exits 1" eval '((RC == 1))'

echo "$passed passed, $failed failed"
((failed == 0))
