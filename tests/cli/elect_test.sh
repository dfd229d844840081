#!/usr/bin/env bash
# End-to-end test of `etcd-recipes elect` and `observe`.
#
#   bash tests/cli/elect_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started (CTest's skip code when SKIP_RETURN_CODE is set). The
# interoperability checks need etcdctl (see lib.sh) and are skipped without it.
#
# The commands run while leading log "start TERM" / "end TERM" lines to a
# file; the checks read the order of those lines, never timing alone.

# Checks are written as eval strings evaluated later, and the commands run
# while leading are sh -c scripts: expansions in single quotes are intended.
# shellcheck disable=SC2016,SC2034

set -u

TEST_NAME=elect-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A command for while leading: appends "start $TERM TAG" and "end $TERM TAG"
# to LOG around a sleep of SECS.
logged() { # logged LOG SECS TAG
  echo "echo \"start \$ETCD_RECIPES_TERM $3\" >>$1; sleep $2; echo \"end \$ETCD_RECIPES_TERM $3\" >>$1"
}
# revoke_lease_of PREFIX: revokes the lease of the (only) key under PREFIX.
revoke_lease_of() {
  local lease
  lease=$("$BIN" --endpoints "$EP" kv get "$1" --prefix -w json | grep -o '"lease":"[0-9a-f]*"' | head -1 | cut -d'"' -f4)
  [[ -n $lease ]] || return 1
  "$BIN" --endpoints "$EP" lease revoke "$lease" >/dev/null
}
lines_of() { tr '\n' ' ' <"$1"; }

start_etcd_or_skip

# --- usage -------------------------------------------------------------------------------

for args in "elect" "elect x --ttl 0" "elect x --timeout bogus" "observe" "observe x --bogus"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done
run elect --help
check "elect --help documents the exit codes and the environment" \
  eval '((RC == 0)) && [[ $OUT == *ETCD_RECIPES_TERM*ETCD_RECIPES_LEADER_KEY*"Exit codes"*75* ]]'
run elect "" -- true
check "an empty election name is a usage error (exit 2), nothing written" \
  eval '((RC == 2)) && [[ $ERR == *"must not be empty"* ]] && keys_are "" 0'

# --- elect: running a command ----------------------------------------------------------------

run elect t/env -- sh -c 'echo "$ETCD_RECIPES_TERM $ETCD_RECIPES_LEADER_KEY"; exit 7'
check "elect runs CMD with the term and leader key in its environment and exits with its status" \
  eval '((RC == 7)) && [[ $OUT =~ ^[1-9][0-9]*\ t/env/[0-9a-f]+$ && -z $ERR ]]'
check "elect resigned (deleted its key) after CMD" keys_are t/env/ 0

# Three candidates: they lead one after the other, in arrival order, terms increasing.
: >"$WORK/ho.log"
pids=()
for tag in a b c; do
  spawn "ho-$tag" elect t/ho --value "$tag" -- sh -c "$(logged "$WORK/ho.log" 0.5 "$tag")"
  pids+=("$PID")
  n=${#pids[@]}
  wait_until 15 keys_are t/ho/ "$n"
done
rcs=""
tags=(a b c)
for i in 0 1 2; do
  finish "${pids[$i]}" "ho-${tags[$i]}"
  rcs+="$RC "
done
OUT=$(lines_of "$WORK/ho.log")
check "3 candidates lead in arrival order, never together" \
  eval '[[ $rcs == "0 0 0 " ]] && [[ $(awk "{print \$1 \$3}" "$WORK/ho.log" | tr "\n" " ") == "starta enda startb endb startc endc " ]]'
check "terms strictly increase from one leader to the next" \
  eval 'awk "\$1 == \"start\" { if (\$2 + 0 <= last) exit 1; last = \$2 + 0 }" "$WORK/ho.log"'

# --timeout while another leads.
spawn leader elect t/to --value first -- sleep 30
leader=$PID
wait_until 15 keys_are t/to/ 1
run elect t/to --timeout 300ms -- sh -c 'echo ran'
check "elect --timeout while another leads: exit 3, CMD not run, its key gone" \
  eval '((RC == 3)) && [[ $OUT != *ran* ]] && keys_are t/to/ 1'
kill -TERM "$leader"
finish "$leader" leader
check "SIGTERM is forwarded to CMD; elect exits with its status and resigns" \
  eval '((RC == 143)) && keys_are t/to/ 0'

# Without CMD: prints the key and the term, leads until SIGTERM.
spawn holder elect t/hold --value holder
holder=$PID
wait_until 15 lines_at_least "$WORK/holder.out" 2
kill -TERM "$holder"
finish "$holder" holder
check "elect without CMD prints key and term, SIGTERM resigns, exit 0" \
  eval '((RC == 0)) && [[ $OUT =~ ^t/hold/[0-9a-f]+$'"'"'\n'"'"'[1-9][0-9]*$ ]] && keys_are t/hold/ 0'

# Leadership lost while CMD runs.
spawn lost elect t/lost --ttl 2 -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/lost.log"
wait_until 15 file_has "$WORK/lost.log" ready
revoke_lease_of t/lost/
revoked=$?
finish "$PID" lost
check "leadership lost (lease revoked) while CMD runs: CMD gets SIGTERM, exit 75" \
  eval '((revoked == 0 && RC == 75)) && file_has "$WORK/lost.log" "got TERM" && [[ $ERR == *lost* ]]'

spawn deleted elect t/del -- \
  sh -c 'trap "kill \$!; echo got TERM >>$0; exit 0" TERM; echo ready >>$0; sleep 30 & wait' "$WORK/del.log"
wait_until 15 file_has "$WORK/del.log" ready
"$BIN" --endpoints "$EP" kv del --prefix t/del/ >/dev/null
finish "$PID" deleted
check "leader key deleted by someone while CMD runs: CMD gets SIGTERM, exit 75, no key left" \
  eval '((RC == 75)) && file_has "$WORK/del.log" "got TERM" && keys_are t/del/ 0'

# --- observe -------------------------------------------------------------------------------------

run observe t/none --once
check "observe --once without a leader: exit 1, says so" eval '((RC == 1)) && [[ $ERR == *"no leader"* && -z $OUT ]]'

spawn obs observe t/obs
obs=$PID
spawn obsjson observe t/obs --json
obsjson=$PID
wait_until 15 eval '[[ -s $WORK/obsjson.out ]]' # the initial state: no leader
spawn v1 elect t/obs --value v1 -- sleep 1
v1=$PID
wait_until 15 keys_are t/obs/ 1
spawn v2 elect t/obs --value v2 -- true
wait_until 15 keys_are t/obs/ 2
run observe t/obs --once
check "observe --once prints the current leader's value" eval '((RC == 0)) && [[ $OUT == v1 ]]'
run observe t/obs --once --json
check "observe --once --json prints key and value (base64), term and lease (hex)" \
  eval '((RC == 0)) && [[ $OUT =~ ^\{\"leader\":\{\"key\":\"dC9vYnMv[A-Za-z0-9+/=]+\",\"lease\":\"[0-9a-f]{16}\",\"term\":[0-9]+,\"value\":\"djE=\"\}\}$ ]]'
finish "$v1" v1
finish "$PID" v2
wait_until 15 eval '[[ $(grep -c . "$WORK/obsjson.out") -ge 4 ]]'
kill -TERM "$obs" "$obsjson"
finish "$obs" obs
check "observe prints each leader's value as it changes, exit 0 on SIGTERM" \
  eval '((RC == 0)) && [[ $(lines_of "$WORK/obs.out") == "v1 v2 " ]]'
finish "$obsjson" obsjson
check "observe --json also shows the leaderless moments" \
  eval '((RC == 0)) && [[ $(grep -c "\"leader\":null" "$WORK/obsjson.out") -ge 2 && $(grep -c "\"value\":\"djI=\"" "$WORK/obsjson.out") == 1 ]]'

# --- interoperability with etcdctl elect --------------------------------------------------------------

if [[ -n $ETCDCTL ]]; then
  # Started directly (not through a function), so that $! is etcdctl itself.
  ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" elect t/ia theirs >"$WORK/ctl-a.out" 2>&1 &
  theirs=$!
  BG_PIDS+=("$theirs")
  wait_until 15 file_has "$WORK/ctl-a.out" theirs
  run observe t/ia --once
  check "observe shows the value of etcdctl's leader" eval '((RC == 0)) && [[ $OUT == theirs ]]'
  run elect t/ia --timeout 1s -- echo ours-got-it
  check "while etcdctl leads, etcd-recipes elect waits" eval '((RC == 3)) && [[ $OUT != *got-it* ]]'
  spawn after elect t/ia -- echo ours-got-it
  after=$PID
  wait_until 15 keys_are t/ia/ 2
  kill -INT "$theirs" # etcdctl resigns on SIGINT
  wait "$theirs"
  finish "$after" after
  check "after etcdctl resigns, etcd-recipes elect leads" eval '((RC == 0)) && [[ $OUT == ours-got-it ]]'

  spawn ours elect t/ib --value ours -- sleep 30
  ours=$PID
  wait_until 15 keys_are t/ib/ 1
  ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" elect --listen t/ib >"$WORK/listen.out" 2>&1 &
  listener=$!
  BG_PIDS+=("$listener")
  RC=0
  OUT=$(timeout 1 env ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" elect t/ib theirs 2>&1) || RC=$?
  ERR=""
  check "while etcd-recipes elect leads, etcdctl elect waits" eval '((RC == 124)) && [[ $OUT != *theirs* ]]'
  wait_until 15 file_has "$WORK/listen.out" ours
  OUT=$(cat "$WORK/listen.out")
  check "etcdctl elect --listen shows our leader's value" file_has "$WORK/listen.out" ours
  kill -TERM "$ours"
  finish "$ours" ours
  kill -TERM "$listener"
  wait "$listener" 2>/dev/null
else
  echo "SKIP: interoperability with etcdctl elect (no etcdctl)"
fi

# --- the proposal's size limit ---------------------------------------------------------------------------

# A value over the limit is refused with exit 2 and the limit in bytes;
# the limit itself (and a byte less) campaigns against this etcd, whose
# --max-request-bytes is the default.
head -c 1000000 /dev/zero | tr '\0' a >"$WORK/big"
run elect t/big --value - -- true <"$WORK/big"
limit=$(grep -o 'at most [0-9]* bytes' <<<"$ERR" | grep -o '[0-9]*')
check "elect --value - of 1,000,000 bytes: exit 2 naming the limit in bytes, nothing written" \
  eval '((RC == 2)) && [[ -n $limit ]] && ((limit > 520000 && limit < 524288)) && keys_are t/big/ 0'
for size in $((limit - 1)) "$limit"; do
  head -c "$size" /dev/zero | tr '\0' a >"$WORK/big"
  run elect t/big --value - -- sh -c 'echo leading' <"$WORK/big"
  check "elect --value - of $size bytes (the limit or just under) leads and runs CMD" \
    eval '((RC == 0)) && [[ $OUT == leading ]]'
done
head -c $((limit + 1)) /dev/zero | tr '\0' a >"$WORK/big"
run elect t/big --value - -- sh -c 'echo leading' <"$WORK/big"
check "elect --value - of $((limit + 1)) bytes (just over): exit 2, CMD not run, nothing written" \
  eval '((RC == 2)) && [[ -z $OUT && $ERR == *"is $((limit + 1)) bytes"*"at most $limit bytes"* ]] && keys_are t/big/ 0'

# --- nothing left behind ---------------------------------------------------------------------------------

OUT=$("$BIN" --endpoints "$EP" kv get --prefix t/ --keys-only)
check "no election keys are left behind" eval '[[ -z $OUT ]]'

echo "$passed passed, $failed failed"
((failed == 0))
