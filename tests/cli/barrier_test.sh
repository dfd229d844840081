#!/usr/bin/env bash
# End-to-end test of `etcd-recipes barrier set`, `remove` and `wait` (a gate,
# and N parties with --parties).
#
#   bash tests/cli/barrier_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd on free loopback ports, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# Variables used only inside those strings look unused to shellcheck.
# shellcheck disable=SC2016,SC2034

set -u

TEST_NAME=barrier-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

# The raft index moves with every write, lease grants included.
raft_index() { "$BIN" --endpoints "$EP" -w json status | sed -n 's/.*"raft_index":\([0-9]*\).*/\1/p'; }
# Watches etcd serves now: a waiting `barrier wait` holds one, opened once
# it has read the barrier's state, so a rise shows a waiter that is parked.
watchers() {
  (
    exec 3<>"/dev/tcp/${EP%:*}/${EP##*:}" || exit 1
    printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    timeout 2 cat <&3
  ) 2>/dev/null | awk '$1 == "etcd_debugging_mvcc_watcher_total" { print $2 + 0 }'
}
watchers_above() { local n; n=$(watchers) && [[ -n $n ]] && ((n > $1)); }
# parked NAME PID BASE: waits until the spawned waiter PID holds a watch
# (more than BASE watches), then checks that it is still waiting.
parked() {
  wait_until 15 watchers_above "$3"
  check "$1" alive "$2"
}
# ended_within SECONDS PID NAME: waits (bounded) for PID and sets RC, OUT,
# ERR; fails unless it ended within SECONDS.
ended_within() {
  local t0=$SECONDS
  wait_until "$1" dead "$2"
  ELAPSED=$((SECONDS - t0))
  finish "$2" "$3"
}

# --- usage: exit 2, nothing written -------------------------------------------------

before=$(raft_index)
for args in "barrier" "barrier set" "barrier remove" "barrier wait" "barrier set b/" "barrier remove b/" \
  "barrier wait b/" "barrier wait b --parties 0" "barrier wait b --parties -3" "barrier wait b --parties x" \
  "barrier wait b --timeout bogus" "barrier wait b --timeout 0s" "barrier wait b --until-set --parties 2" \
  "barrier wait b --ttl 5" "barrier wait b --parties 2 --ttl 0" "barrier set b extra"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
for verb in set remove wait; do
  run barrier "$verb" ""
  check "an empty name exits 2: barrier $verb ''" eval '((RC == 2)) && [[ $ERR == *barrier* ]]'
done
run barrier wait "" --parties 2
check "an empty name exits 2: barrier wait '' --parties 2" eval '((RC == 2))'
check "usage errors wrote nothing (raft index unchanged)" eval '[[ -n $before && $(raft_index) == "$before" ]]'

run barrier set --help
check "barrier set --help documents exit 1 when set already" eval '((RC == 0)) && [[ $OUT == *"it was set already"* ]]'
run barrier wait --help
check "barrier wait --help documents exit 3" eval '((RC == 0)) && [[ $OUT == *"--timeout expired while waiting"* ]]'

# --- the gate: set, wait, remove ------------------------------------------------------

run barrier wait g/never
check "wait on a barrier never set returns at once, exit 0" eval '((RC == 0)) && [[ -z $OUT ]]'

run barrier set g/a
check "set exits 0 and prints nothing" eval '((RC == 0)) && [[ -z $OUT && -z $ERR ]]'
check "the set outlives the setter: NAME/set-by stays (no lease)" keys_are g/a/set-by 1
run barrier set g/a
check "set of a barrier set already exits 1 and says so" eval '((RC == 1)) && [[ $ERR == *"set already"* ]]'
run -w json barrier set g/a
check "set -w json: {\"set\":false}, exit 1" eval '((RC == 1)) && [[ $OUT == "{\"set\":false}" ]]'
run barrier wait g/a --timeout 300ms
check "wait --timeout on a set barrier exits 3" eval '((RC == 3)) && [[ $ERR == *"timed out after 300ms"* ]]'

# Set in one process (gone), wait in another, remove in a third.
base=$(watchers)
spawn waiter barrier wait g/a --timeout 60s
WAITER=$PID
parked "wait blocks on a barrier whose setter exited" "$WAITER" "$base"
run barrier remove g/a
check "remove of a set barrier exits 0 and prints nothing" eval '((RC == 0)) && [[ -z $OUT && -z $ERR ]]'
ended_within 10 "$WAITER" waiter
check "remove (another process) releases the waiter: exit 0" eval '((RC == 0 && ELAPSED <= 5))'
check "remove leaves no key behind" keys_are g/a 0
run barrier remove g/a
check "remove of an open barrier: exit 0, said on stderr" eval '((RC == 0)) && [[ $ERR == *"was not set"* ]]'
run -w json barrier remove g/a
check "remove -w json: {\"removed\":false}" eval '((RC == 0)) && [[ $OUT == "{\"removed\":false}" ]]'
run -w json barrier set g/a
check "set -w json: {\"set\":true}" eval '((RC == 0)) && [[ $OUT == "{\"set\":true}" ]]'
run -w json barrier remove g/a
check "remove -w json: {\"removed\":true}" eval '((RC == 0)) && [[ $OUT == "{\"removed\":true}" ]]'

# Concurrent sets of an open gate: exactly one sets it.
pids=()
for i in 1 2 3 4; do
  spawn "s$i" barrier set g/race
  pids+=("$PID")
done
rcs=""
for i in 1 2 3 4; do
  finish "${pids[$((i - 1))]}" "s$i"
  rcs+="$RC"$'\n'
done
check "of 4 concurrent sets, exactly one exits 0, the others 1" \
  eval '[[ $(sort <<<"$rcs" | tr -d "\n") == 0111 ]]'
run barrier remove g/race

# The gate key NAME alone gone (as when a setter's lease lapses) does not
# open the barrier: NAME/set-by keeps it set.
run barrier set g/lapse
"$BIN" --endpoints "$EP" kv del g/lapse >/dev/null
run barrier wait g/lapse --timeout 300ms
check "the gate key's loss alone does not open the barrier: exit 3" eval '((RC == 3)) && keys_are g/lapse/set-by 1'
run barrier remove g/lapse
check "remove opens it all the same" eval '((RC == 0 && ${#ERR} == 0)) && keys_are g/lapse 0'

# Several waiters, one remove.
run barrier set g/many
base=$(watchers)
pids=()
for i in 1 2 3; do
  spawn "m$i" barrier wait g/many --timeout 60s
  pids+=("$PID")
done
wait_until 15 watchers_above $((base + 2))
check "three waiters wait on a set barrier" eval 'alive ${pids[0]} && alive ${pids[1]} && alive ${pids[2]}'
run barrier remove g/many
rcs=""
for i in 1 2 3; do
  ended_within 10 "${pids[$((i - 1))]}" "m$i"
  rcs+="$RC "
done
check "one remove releases all three waiters" eval '[[ $rcs == "0 0 0 " ]]'

# --until-set: an open barrier does not let the wait through.
run barrier wait g/u --until-set --timeout 300ms
check "wait --until-set on a barrier never set times out: exit 3" eval '((RC == 3))'
base=$(watchers)
spawn until barrier wait g/u --until-set --timeout 60s
UNTIL=$PID
parked "wait --until-set blocks while the barrier is open" "$UNTIL" "$base"
run barrier set g/u
run barrier wait g/u --timeout 300ms
check "wait --until-set still blocks once the barrier is set" alive "$UNTIL"
run barrier remove g/u
ended_within 10 "$UNTIL" until
check "wait --until-set returns once the barrier is set and removed: exit 0" eval '((RC == 0 && ELAPSED <= 5))'

# Signals end a waiting wait promptly.
run barrier set g/sig
base=$(watchers)
spawn sigterm barrier wait g/sig
SIGTERM_PID=$PID
parked "wait without --timeout waits" "$SIGTERM_PID" "$base"
kill -TERM "$SIGTERM_PID"
ended_within 10 "$SIGTERM_PID" sigterm
check "SIGTERM ends a waiting wait promptly: exit 143" eval '((RC == 143 && ELAPSED <= 3))'
base=$(watchers)
INTERRUPTIBLE=1 spawn sigint barrier wait g/sig
SIGINT_PID=$PID
parked "wait (interruptible) waits" "$SIGINT_PID" "$base"
kill -INT "$SIGINT_PID"
ended_within 10 "$SIGINT_PID" sigint
check "SIGINT ends a waiting wait promptly: exit 130" eval '((RC == 130 && ELAPSED <= 3))'
run barrier remove g/sig

# --- N parties -----------------------------------------------------------------------

run barrier wait p/one --parties 1
check "--parties 1 returns at once, nothing left" eval '((RC == 0)) && keys_are p/one/parties/ 0'

pids=()
for i in 1 2; do
  spawn "q$i" barrier wait p/3 --parties 3 --timeout 60s
  pids+=("$PID")
done
wait_until 15 keys_are p/3/parties/ 2
check "two of three parties wait (two party keys)" eval 'keys_are p/3/parties/ 2 && alive ${pids[0]} && alive ${pids[1]}'
spawn q3 barrier wait p/3 --parties 3 --timeout 60s
pids+=("$PID")
rcs=""
for i in 1 2 3; do
  ended_within 15 "${pids[$((i - 1))]}" "q$i"
  rcs+="$RC "
done
check "the third party releases all three: exit 0 each" eval '[[ $rcs == "0 0 0 " ]]'
check "a completed round leaves no party key" keys_are p/3/parties/ 0

pids=()
for i in 1 2; do
  spawn "t$i" barrier wait p/t --parties 3 --timeout 1s
  pids+=("$PID")
done
rcs=""
for i in 1 2; do
  ended_within 15 "${pids[$((i - 1))]}" "t$i"
  rcs+="$RC "
done
check "two of three parties alone time out: exit 3 each" \
  eval '[[ $rcs == "3 3 " ]] && [[ $ERR == *"timed out after 1s waiting for 3 parties"* ]]'
check "parties that timed out leave no key" keys_are p/t/parties/ 0
run barrier wait p/t --parties 3 --timeout 300ms
check "the parties that left do not count: a later one times out too" eval '((RC == 3))'

spawn psig barrier wait p/sig --parties 2
PSIG=$PID
wait_until 15 keys_are p/sig/parties/ 1
check "a party waits (its key exists)" eval 'keys_are p/sig/parties/ 1 && alive $PSIG'
kill -TERM "$PSIG"
ended_within 10 "$PSIG" psig
check "SIGTERM ends a waiting party promptly: exit 143, its key gone" \
  eval '((RC == 143 && ELAPSED <= 3)) && keys_are p/sig/parties/ 0'

# --- an unreachable etcd: exit 1, not a wait -----------------------------------------------

for args in "barrier wait g/x --timeout 20s" "barrier wait p/x --parties 2 --timeout 20s" "barrier set g/x"; do
  t0=$SECONDS
  # shellcheck disable=SC2086  # word splitting intended
  timeout -k 5 60 "$BIN" --endpoints 127.0.0.1:1 --timeout 500ms $args >"$WORK/out" 2>"$WORK/err"
  RC=$?
  ELAPSED=$((SECONDS - t0))
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
  check "unreachable etcd: exit 1 at once: $args" eval '((RC == 1 && ELAPSED <= 10))'
done

check "no gate key is left, nor any party key" eval 'keys_are g/ 0 && [[ $(keys p/ | grep -c /parties/) == 0 ]]'

# --- enter and leave together (the double barrier) ------------------------------------

for args in "barrier enter d" "barrier enter d --parties 0" "barrier enter d/ --parties 2" \
  "barrier enter d --parties 2 --timeout bogus"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run barrier enter d/one --parties 1
check "--parties 1 enters and leaves at once, nothing left" eval '((RC == 0)) && keys_are d/one/ 0'

# Three parties: each writes a line in the round, none leaves before all are in.
pids=()
for i in 1 2 3; do
  spawn "e$i" barrier enter d/3 --parties 3 --timeout 60s -- sh -c "echo in-\$ETCD_RECIPES_BARRIER >>'$WORK/round'"
  pids+=("$PID")
  if ((i < 3)); then
    wait_until 15 keys_are d/3/parties/ "$i"
    check "party $i waits to enter (CMD not run yet)" eval '[[ ! -s $WORK/round ]] && alive ${pids[$((i - 1))]}'
  fi
done
rcs=""
for i in 1 2 3; do
  ended_within 20 "${pids[$((i - 1))]}" "e$i"
  rcs+="$RC "
done
check "three parties enter, run CMD and leave: exit 0 each" eval '[[ $rcs == "0 0 0 " ]]'
check "CMD ran once per party, with ETCD_RECIPES_BARRIER" \
  eval '[[ $(grep -c "^in-d/3$" "$WORK/round") == 3 ]]'
check "a finished round leaves no key" keys_are d/3/ 0

run barrier enter d/alone --parties 2 --timeout 500ms -- true
check "a party alone times out entering: exit 3, its key withdrawn" \
  eval '((RC == 3)) && [[ $ERR == *"timed out after 500ms"* ]] && keys_are d/alone/ 0'
run barrier enter d/fails --parties 1 -- sh -c "exit 7"
check "CMD's exit status is the command's" eval '((RC == 7)) && keys_are d/fails/ 0'
run barrier enter d/nocmd --parties 1 -- /nonexistent/cmd
check "a CMD that is not there: exit 127, the party did not enter" eval '((RC == 127)) && keys_are d/nocmd/ 0'

echo "$passed passed, $failed failed"
((failed == 0))
