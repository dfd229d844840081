#!/usr/bin/env bash
# End-to-end test of `etcd-recipes lock`, `semaphore` and `rwlock`.
#
#   bash tests/cli/lock_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started (CTest's skip code when SKIP_RETURN_CODE is set). The
# interoperability checks need etcdctl (see lib.sh) and are skipped without it.
#
# The commands run under the lock log "start TOKEN" / "end TOKEN" lines to a
# file; the checks read the order of those lines, never timing alone.

# Checks are written as eval strings evaluated later, and the commands run
# under the lock are sh -c scripts: expansions in single quotes are intended.
# shellcheck disable=SC2016,SC2034

set -u

TEST_NAME=lock-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A command for under the lock: appends "start $TOKEN" and "end $TOKEN"
# (TOKEN from the environment) to LOG around a sleep of SECS.
logged() { # logged LOG SECS [TAG]
  echo "echo \"start \$ETCD_RECIPES_FENCING_TOKEN ${3:-}\" >>$1; sleep $2; echo \"end \$ETCD_RECIPES_FENCING_TOKEN ${3:-}\" >>$1"
}
# exclusive LOG N: LOG is N start/end pairs, never interleaved, tokens increasing.
exclusive() {
  awk -v n="$2" 'BEGIN { last = 0 }
    NR % 2 == 1 { if ($1 != "start" || $2 + 0 <= last) exit 1; t = $2 + 0; last = t }
    NR % 2 == 0 { if ($1 != "end" || $2 + 0 != t) exit 1 }
    END { if (NR != 2 * n) exit 1 }' "$1"
}
# max_concurrent LOG: the most commands that ran at once.
max_concurrent() { awk '$1 == "start" { if (++n > m) m = n } $1 == "end" { n-- } END { print m + 0 }' "$1"; }

start_etcd_or_skip
ctl() { ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" "$@"; }

# --- usage --------------------------------------------------------------------------

for args in "lock" "lock x --ttl 0" "lock x --timeout bogus" "semaphore s" "semaphore s 0 -- true" \
  "rwlock r" "rwlock r sideways -- true"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run lock --help
check "lock --help documents the exit codes and the environment" \
  eval '((RC == 0)) && [[ $OUT == *"Exit codes"*75*ETCD_RECIPES_FENCING_TOKEN* || $OUT == *ETCD_RECIPES_FENCING_TOKEN*"Exit codes"*75* ]]'

# --- lock: running a command ----------------------------------------------------------

run lock t/env -- sh -c 'echo "$ETCD_RECIPES_FENCING_TOKEN $ETCD_RECIPES_LOCK_KEY"; exit 7'
check "lock runs CMD with the token and key in its environment and exits with its status" \
  eval '((RC == 7)) && [[ $OUT =~ ^[1-9][0-9]*\ t/env/[0-9a-f]+$ && -z $ERR ]]'
check "lock released the key after CMD" keys_are t/env/ 0

run lock t/env -- sh -c 'kill -KILL $$'
check "CMD killed by a signal: exit 128+N" eval '((RC == 137))'
run lock t/env -- "$WORK/no-such-program"
check "CMD not found: exit 127 with a message, the lock released" \
  eval '((RC == 127)) && [[ $ERR == "etcd-recipes: lock t/env: "*no-such-program* ]] && keys_are t/env/ 0'
run lock t/env -- sh -c 'read -r line; echo "got $line"' <<<"hello"
check "CMD inherits stdin" eval '((RC == 0)) && [[ $OUT == "got hello" ]]'

# Four at once: they take turns, tokens increasing.
: >"$WORK/mx.log"
pids=()
for i in 1 2 3 4; do
  spawn "mx$i" lock t/mx -- sh -c "$(logged "$WORK/mx.log" 0.3)"
  pids+=("$PID")
done
rcs=""
for i in 1 2 3 4; do
  finish "${pids[$((i - 1))]}" "mx$i"
  rcs+="$RC "
done
OUT=$(cat "$WORK/mx.log")
check "4 concurrent locks never overlap, tokens increase" eval '[[ $rcs == "0 0 0 0 " ]] && exclusive "$WORK/mx.log" 4'

# --- lock without CMD, --timeout, signals while waiting -----------------------------------

spawn holder lock t/hold
wait_until 15 lines_at_least "$WORK/holder.out" 2
holder=$PID
OUT=$(cat "$WORK/holder.out")
hold_key=$(sed -n 1p "$WORK/holder.out")
check "lock without CMD prints the key and the fencing token, and holds" \
  eval '[[ $hold_key == t/hold/* && $(sed -n 2p "$WORK/holder.out") =~ ^[1-9][0-9]*$ ]] && keys_are t/hold/ 1'

start=$SECONDS
run lock t/hold --timeout 1s -- touch "$WORK/ran"
check "--timeout: exit 3 with a message, CMD not run, no key left" \
  eval '((RC == 3)) && [[ $ERR == *"timed out"* && ! -e $WORK/ran ]] && ((SECONDS - start < 10)) && keys_are t/hold/ 1'

for sig in TERM INT; do
  INTERRUPTIBLE=1 spawn "waiter$sig" lock t/hold -- touch "$WORK/ran"
  waiter=$PID
  wait_until 15 keys_are t/hold/ 2
  if [[ $sig == INT ]] && ignores "$waiter" 2; then
    echo "SKIP: SIGINT while waiting (this shell cannot start a command with SIGINT not ignored)"
    kill -TERM "$waiter"
    finish "$waiter" "waiter$sig"
    continue
  fi
  kill -"$sig" "$waiter"
  finish "$waiter" "waiter$sig"
  [[ $sig == TERM ]] && expected=143 || expected=130
  check "SIG$sig while waiting: exit $expected, CMD not run, its key already gone" \
    eval '((RC == expected)) && [[ ! -e $WORK/ran ]] && keys_are t/hold/ 1'
done

kill -TERM "$holder"
finish "$holder" holder
check "lock without CMD: SIGTERM releases, exit 0" eval '((RC == 0)) && keys_are t/hold/ 0'

# --- signals while CMD runs, a lost lock ---------------------------------------------------

spawn fwd lock t/fwd -- sh -c 'trap "kill \$!; echo got TERM >>$0; exit 5" TERM; echo ready >>$0; sleep 30 & wait' \
  "$WORK/fwd.log"
wait_until 15 file_has "$WORK/fwd.log" ready
kill -TERM "$PID"
finish "$PID" fwd
check "SIGTERM while CMD runs: forwarded to CMD, exit with CMD's status, lock released" \
  eval '((RC == 5)) && file_has "$WORK/fwd.log" "got TERM" && keys_are t/fwd/ 0'

# revoke_lease_of PREFIX: revokes the lease of the (only) key under PREFIX.
revoke_lease_of() {
  local lease
  lease=$("$BIN" --endpoints "$EP" kv get "$1" --prefix -w json | grep -o '"lease":"[0-9a-f]*"' | head -1 | cut -d'"' -f4)
  [[ -n $lease ]] || return 1
  if [[ -n $ETCDCTL ]]; then
    ctl lease revoke "$lease" >/dev/null
  else
    "$BIN" --endpoints "$EP" lease revoke "$lease" >/dev/null
  fi
}

spawn lost lock t/lost --ttl 2 -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/lost.log"
wait_until 15 file_has "$WORK/lost.log" ready
revoke_lease_of t/lost/
revoked=$?
finish "$PID" lost
check "lock lost (lease revoked) while CMD runs: CMD gets SIGTERM, exit 75" \
  eval '((revoked == 0 && RC == 75)) && file_has "$WORK/lost.log" "got TERM" && [[ $ERR == *lost* ]]'

# An operator deleting the holder's key ends the hold: CMD
# is stopped, exit 75, and the message names the deletion (not the lease).
spawn deleted lock t/deleted --ttl 10 -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/deleted.log"
wait_until 15 file_has "$WORK/deleted.log" ready
"$BIN" --endpoints "$EP" kv del t/deleted/ --prefix >/dev/null
finish "$PID" deleted
check "lock whose key is deleted while CMD runs: CMD gets SIGTERM, exit 75, the cause named" \
  eval '((RC == 75)) && file_has "$WORK/deleted.log" "got TERM" && [[ $ERR == *"key was deleted"* ]]'

# A CMD that ignores SIGTERM gets SIGKILL after the grace period.
spawn stubborn lock t/lost --ttl 2 -- sh -c 'trap "" TERM; echo ready >>$0; exec sleep 30' "$WORK/stubborn.log"
wait_until 15 file_has "$WORK/stubborn.log" ready
revoke_lease_of t/lost/
start=$SECONDS
finish "$PID" stubborn
check "a CMD that ignores SIGTERM after the loss gets SIGKILL; exit 75" \
  eval '((RC == 75 && SECONDS - start < 15)) && [[ $ERR == *SIGKILL* ]]'

# The only member stalls for 5 s while CMD runs (TTL 10 s): the hold
# survives, CMD finishes, the release succeeds, and the tool says once that
# etcd was not answering and once that it answers again.
: >"$WORK/stall.log"
spawn stall lock t/stall --ttl 10 -- sh -c 'echo start >>$0; sleep 8; echo end >>$0' "$WORK/stall.log"
wait_until 15 file_has "$WORK/stall.log" start
kill -STOP "$ETCD_PID"
sleep 5 # the stall itself
kill -CONT "$ETCD_PID"
finish "$PID" stall
check "lock rides out a 5 s stall while CMD runs: CMD ran to its end, exit 0" \
  eval '((RC == 0)) && file_has "$WORK/stall.log" end'
check "lock said once that etcd was not answering, and once that it answers again" \
  eval '(($(grep -c "etcd is not answering" <<<"$ERR") == 1 && $(grep -c "etcd answers again" <<<"$ERR") == 1))'

# --- interoperability with etcdctl lock ------------------------------------------------------

if [[ -n $ETCDCTL ]]; then
  spawn ours lock t/interop-a -- sleep 2
  ours=$PID
  wait_until 15 keys_are t/interop-a/ 1
  RC=0
  OUT=$(timeout 1 env ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" lock t/interop-a echo etcdctl-got-it 2>&1) || RC=$?
  ERR=""
  check "while etcd-recipes lock runs CMD, etcdctl lock NAME waits" eval '((RC == 124)) && [[ $OUT != *got-it* ]]'
  finish "$ours" ours
  RC=0
  OUT=$(timeout 10 env ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" lock t/interop-a echo etcdctl-got-it 2>&1) || RC=$?
  check "after it, etcdctl lock NAME gets the lock" eval '((RC == 0)) && [[ $OUT == *etcdctl-got-it* ]]'

  ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" lock t/interop-b sleep 2 >"$WORK/ctl.out" 2>&1 &
  theirs=$!
  BG_PIDS+=("$theirs")
  wait_until 15 keys_are t/interop-b/ 1
  run lock t/interop-b --timeout 1s -- echo ours-got-it
  check "while etcdctl lock runs a command, etcd-recipes lock NAME waits" \
    eval '((RC == 3)) && [[ $OUT != *got-it* ]]'
  spawn after lock t/interop-b -- echo ours-got-it
  finish "$PID" after
  wait "$theirs"
  check "after it, etcd-recipes lock NAME gets the lock" eval '((RC == 0)) && [[ $OUT == ours-got-it ]]'
else
  echo "SKIP: interoperability with etcdctl lock (no etcdctl)"
fi

# --- semaphore -----------------------------------------------------------------------------------

: >"$WORK/sem.log"
pids=()
for i in 1 2 3; do
  spawn "sem$i" semaphore t/sem 2 -- sh -c "$(logged "$WORK/sem.log" 0.7)"
  pids+=("$PID")
done
rcs=""
for i in 1 2 3; do
  finish "${pids[$((i - 1))]}" "sem$i"
  rcs+="$RC "
done
OUT=$(cat "$WORK/sem.log")
check "semaphore N=2, 3 at once: at most 2 run at a time (and 2 do)" \
  eval '[[ $rcs == "0 0 0 " ]] && (($(max_concurrent "$WORK/sem.log") == 2)) && (($(grep -c ^end "$WORK/sem.log") == 3))'
check "semaphore leaves only NAME/permits behind" eval '[[ $(keys t/sem/) == 1 ]] && keys_are t/sem/permits 1'

run semaphore t/sem 2 -- sh -c 'echo "$ETCD_RECIPES_FENCING_TOKEN $ETCD_RECIPES_PERMIT_KEY"'
check "semaphore passes the token and ETCD_RECIPES_PERMIT_KEY" \
  eval '((RC == 0)) && [[ $OUT =~ ^[1-9][0-9]*\ t/sem/holders/[0-9a-f-]+$ ]]'
run semaphore t/sem 3 -- true
check "semaphore with another N fails (exit 1)" eval '((RC == 1)) && [[ $ERR == *mismatch* ]]'

# --resize: one permit held, one waiter; growing to 2 admits the waiter while
# the first still holds; later users with the old N take the new count.
spawn rs1 semaphore t/rs 1 -- sh -c "touch '$WORK/rs1.in'; while [ ! -e '$WORK/rs.stop' ]; do sleep 0.05; done"
rs1=$PID
wait_until 15 test -e "$WORK/rs1.in"
spawn rs2 semaphore t/rs 1 --timeout 60s -- sh -c "touch '$WORK/rs2.in'"
rs2=$PID
wait_until 15 keys_are t/rs/holders/ 2
check "semaphore N=1: the second waits while the first holds" eval '[[ ! -e $WORK/rs2.in ]] && alive $rs2'
run semaphore t/rs 2 --resize
check "semaphore --resize 2: exit 0" eval '((RC == 0)) && [[ $ERR == *"2 permits"* ]]'
finish "$rs2" rs2
check "the waiter is admitted while the first still holds" eval '((RC == 0)) && [[ -e $WORK/rs2.in ]] && alive $rs1'
run semaphore t/rs 1 -- true
check "a user giving the old N takes the resized count" eval '((RC == 0))'
touch "$WORK/rs.stop"
finish "$rs1" rs1
check "the first holder ends normally" eval '((RC == 0)) && keys_are t/rs/holders/ 0'
for args in "semaphore t/rs 0 --resize" "semaphore t/rs 2 --resize -- true"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done

# --- rwlock ----------------------------------------------------------------------------------------

: >"$WORK/rd.log"
spawn rd1 rwlock t/rw read -- sh -c "$(logged "$WORK/rd.log" 1)"
rd1=$PID
spawn rd2 rwlock t/rw read -- sh -c "$(logged "$WORK/rd.log" 1)"
finish "$rd1" rd1
rc1=$RC
finish "$PID" rd2
check "rwlock: two readers overlap" eval '((rc1 == 0 && RC == 0)) && (($(max_concurrent "$WORK/rd.log") == 2))'

# A reader holds; a writer queues; a later reader queues behind the writer.
: >"$WORK/rw.log"
spawn r1 rwlock t/rw read -- sh -c "$(logged "$WORK/rw.log" 1 r1)"
r1=$PID
wait_until 15 file_has "$WORK/rw.log" "start"
spawn w rwlock t/rw write -- sh -c "$(logged "$WORK/rw.log" 0.5 w)"
w=$PID
wait_until 15 keys_are t/rw/write/ 1
spawn r2 rwlock t/rw read -- sh -c "$(logged "$WORK/rw.log" 0.5 r2)"
r2=$PID
run rwlock t/rw write --timeout 300ms -- true
wrc=$RC
finish "$r1" r1
rcs="$RC "
finish "$w" w
rcs+="$RC "
finish "$r2" r2
rcs+="$RC"
OUT=$(cat "$WORK/rw.log")
check "rwlock: a writer excludes readers and goes before a later reader" \
  eval '[[ $rcs == "0 0 0" ]] && [[ $(awk "{print \$1 \$3}" "$WORK/rw.log" | tr "\n" " ") == "startr1 endr1 startw endw startr2 endr2 " ]]'
check "rwlock write --timeout while others hold: exit 3" eval '((wrc == 3))'

# Readers that hold at once each have a token of their own, and --help says so.
spawn tok1 rwlock t/rwtok read
tok1=$PID
spawn tok2 rwlock t/rwtok read
tok2=$PID
wait_until 15 eval 'lines_at_least "$WORK/tok1.out" 2 && lines_at_least "$WORK/tok2.out" 2'
t1=$(sed -n 2p "$WORK/tok1.out")
t2=$(sed -n 2p "$WORK/tok2.out")
check "two readers holding at once have different tokens ($t1, $t2)" \
  eval '[[ $t1 =~ ^[0-9]+$ && $t2 =~ ^[0-9]+$ && $t1 != "$t2" ]]'
kill -TERM "$tok1" "$tok2"
finish "$tok1" tok1
finish "$tok2" tok2
run rwlock --help
check "rwlock --help says readers get tokens of their own" \
  eval '((RC == 0)) && [[ $OUT == *"readers that hold at once have different tokens"* && $OUT != *"shared by concurrent readers"* ]]'

run rwlock t/rw write -- sh -c 'echo "$ETCD_RECIPES_FENCING_TOKEN $ETCD_RECIPES_LOCK_KEY"'
check "rwlock passes the token and ETCD_RECIPES_LOCK_KEY" \
  eval '((RC == 0)) && [[ $OUT =~ ^[1-9][0-9]*\ t/rw/write/[0-9a-f]+$ ]]'

# --- lock --force-release: the holder's key deleted, guarded on its token -----------------------------

run lock --force-release t/forced
check "force-release of a free lock: exit 1, saying nobody holds it" eval '((RC == 1)) && [[ $ERR == *"nobody holds it"* ]]'
spawn forced lock t/forced --ttl 10 -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/forced.log"
forced=$PID
wait_until 15 file_has "$WORK/forced.log" ready
spawn forced_next lock t/forced --ttl 10 -- sh -c 'echo "$ETCD_RECIPES_FENCING_TOKEN"'
wait_until 15 keys_are t/forced/ 2 || fail "the holder and its waiter did not both arrive"
run lock --force-release t/forced
check "force-release: exit 0, saying which key (and token) it deleted" \
  eval '((RC == 0)) && [[ $ERR == *"released t/forced: deleted t/forced/"*"(token "* ]]'
finish "$forced" forced
check "... the holder's CMD was stopped as a loss (exit 75)" eval '((RC == 75)) && file_has "$WORK/forced.log" "got TERM"'
finish "$PID" forced_next
check "... and the waiter took the lock" eval '((RC == 0)) && [[ $OUT =~ ^[1-9][0-9]*$ ]]'
run lock --force-release t/forced -- true
check "force-release takes no CMD (exit 2)" eval '((RC == 2))'

# --- nothing left behind ---------------------------------------------------------------------------

OUT=$("$BIN" --endpoints "$EP" kv get --prefix t/ --keys-only)
left_expected=$(printf '%s\n' t/rs/permits t/sem/permits)
check "no lock keys are left behind (only the semaphores' NAME/permits)" eval '[[ $OUT == "$left_expected" ]]'

echo "$passed passed, $failed failed"
((failed == 0))
