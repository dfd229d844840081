#!/usr/bin/env bash
# End-to-end test of the etcd-recipes command-line tool.
#
#   bash tests/cli/cli_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH)
# on free loopback ports in a temporary directory, runs the tool against it,
# and removes everything on exit. Prints one PASS/FAIL line per check and
# "N passed, M failed" at the end; exits 1 if anything failed, 77 if etcd
# cannot be started (CTest's skip code when SKIP_RETURN_CODE is set).

# Checks are written as eval strings evaluated later, so expansions in single
# quotes and variables only read inside them are intended.
# shellcheck disable=SC2016,SC2034

set -u

TEST_NAME=cli-test
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

# --- usage --------------------------------------------------------------------------

run --help
check "--help exits 0 and documents exit codes" eval '((RC == 0)) && [[ $OUT == *"Exit codes"* ]]'
for args in "" "kv" "kv put only-a-key" "kv get" "kv get a --prefix b" "no-such-command" \
  "--timeout bogus kv get a" "lease revoke not-an-id" "lease grant 0"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "usage error exits 2: etcd-recipes $args" eval '((RC == 2)) && [[ -n $ERR ]]'
done

# --- kv -----------------------------------------------------------------------------

run kv put cli/a 1
check "kv put prints a revision" eval '((RC == 0)) && [[ $OUT =~ ^[0-9]+$ ]]'
rev_a=$OUT

run kv put cli/b "hello world"
check "kv put: revisions increase" eval '((RC == 0)) && ((OUT == rev_a + 1))'

run kv get cli/b
check "kv get prints exactly the value" eval '((RC == 0)) && cmp -s "$WORK/out" <(printf "hello world\n") && [[ -z $ERR ]]'

run kv put cli/empty ""
run kv get cli/empty
check "kv get of an empty value prints an empty line" eval '((RC == 0)) && cmp -s "$WORK/out" <(printf "\n")'

run kv get cli/missing
check "kv get of a missing key exits 1 with a message" \
  eval '((RC == 1)) && [[ -z $OUT && $ERR == "etcd-recipes: kv get: "*"not found"* ]]'

run kv get --prefix cli/
check "kv get --prefix prints KEY=VALUE lines" \
  eval '((RC == 0)) && cmp -s "$WORK/out" <(printf "cli/a=1\ncli/b=hello\\\\x20world\ncli/empty=\n")'

run kv get --prefix cli/ --keys-only
check "kv get --prefix --keys-only" eval '((RC == 0)) && cmp -s "$WORK/out" <(printf "cli/a\ncli/b\ncli/empty\n")'

run kv get --prefix cli/nothing-here
check "kv get --prefix with no match prints nothing, exits 0" eval '((RC == 0)) && [[ -z $OUT ]]'

run kv get --prefix cli/ --json
if command -v python3 >/dev/null; then
  check "kv get --json" eval '((RC == 0)) && python3 -c "
import json, sys
import base64, json, sys
kvs = json.load(open(sys.argv[1]))
b = lambda s: base64.b64decode(s).decode()
assert [b(kv[\"key\"]) for kv in kvs] == [\"cli/a\", \"cli/b\", \"cli/empty\"], kvs
assert b(kvs[0][\"value\"]) == \"1\" and kvs[0][\"mod_revision\"] == $rev_a and kvs[0][\"version\"] == 1
assert set(kvs[0]) == {\"key\", \"value\", \"create_revision\", \"mod_revision\", \"version\"}
" "$WORK/out"'
else
  check "kv get --json" eval '((RC == 0)) && [[ $OUT == "["*"\"key\":\"Y2xpL2E=\""*"]" ]]'
fi

run kv get --prefix "" --keys-only
check "kv get --prefix \"\" lists every key" eval '((RC == 0)) && [[ $OUT == *cli/a* && $OUT == *cli/b* ]]'

run kv put cli/dash -- -1
run kv get cli/dash
check "kv put -- accepts a value starting with -" eval '((RC == 0)) && [[ $OUT == "-1" ]]'

run kv del cli/a
check "kv del KEY prints 1" eval '((RC == 0)) && [[ $OUT == 1 ]]'
run kv get cli/a
check "a deleted key is gone" eval '((RC == 1))'
run kv del cli/a
check "kv del of a missing key prints 0" eval '((RC == 0)) && [[ $OUT == 0 ]]'
run kv del --prefix cli/
check "kv del --prefix prints the number deleted" eval '((RC == 0)) && [[ $OUT == 3 ]]'
run kv get --prefix cli/
check "kv del --prefix removed every key" eval '((RC == 0)) && [[ -z $OUT ]]'

# --- leases -----------------------------------------------------------------------------

run lease grant 60
check "lease grant prints a 16-digit hex id" eval '((RC == 0)) && [[ $OUT =~ ^[0-9a-f]{16}$ ]]'
lease=$OUT

run kv put --lease "$lease" cli/leased v
check "kv put --lease" eval '((RC == 0))'
run lease ttl "$lease" --keys
check "lease ttl --keys shows TTLs and the key" \
  eval '((RC == 0)) && [[ $OUT == "lease $lease granted with TTL(60s), remaining("*"s), attached keys([cli/leased])" ]]'
run lease ttl "0x$lease"
check "lease ids are accepted with 0x" eval '((RC == 0))'
run lease ttl "$((16#$lease))"
check "lease ids are hex only: a decimal id (too long for hex) is a usage error" \
  eval '((RC == 2)) && [[ $ERR == *"lease ids are hex"* ]]'
run lease list
check "lease list shows the lease" eval '((RC == 0)) && grep -qx "$lease" "$WORK/out"'
run lease keep-alive --once "$lease"
check "lease keep-alive --once" eval '((RC == 0)) && [[ $OUT == "lease $lease keepalived with TTL(60)" ]]'

run lease revoke "$lease"
check "lease revoke" eval '((RC == 0))'
run kv get cli/leased
check "revoking the lease removed its key" eval '((RC == 1))'
run lease ttl "$lease"
check "lease ttl of a revoked lease exits 1" eval '((RC == 1)) && [[ $ERR == "etcd-recipes: lease ttl "*"not found"* ]]'
run lease revoke "$lease"
check "revoking a revoked lease exits 1" eval '((RC == 1)) && [[ $ERR == "etcd-recipes: lease revoke "* ]]'

# keep-alive holds a short lease past its TTL until it is stopped.
run lease grant 2
short=$OUT
run kv put --lease "$short" cli/kept v
"$BIN" --endpoints "$EP" lease keep-alive "$short" >"$WORK/ka.out" 2>"$WORK/ka.err" &
ka_pid=$!
BG_PIDS+=("$ka_pid")
sleep 3.5
run kv get cli/kept
check "lease keep-alive keeps the key past the TTL" eval '((RC == 0)) && [[ $OUT == v ]]'
kill -TERM "$ka_pid"
wait "$ka_pid"
ka_rc=$?
check "lease keep-alive exits 0 on SIGTERM and printed renewals" \
  eval '((ka_rc == 0)) && grep -q "^lease $short keepalived with TTL(2)$" "$WORK/ka.out"'
check "lease keep-alive does not revoke when it stops" eval 'run kv get cli/kept; ((RC == 0))'

# --- watch ----------------------------------------------------------------------------------

run kv put cli/w/seed x
seed_rev=$OUT
# Anchored at the revision after the seed: the watch sees the events below
# however late it is established.
"$BIN" --endpoints "$EP" kv watch cli/w/k --rev $((seed_rev + 1)) >"$WORK/watch.out" 2>"$WORK/watch.err" &
watch_pid=$!
BG_PIDS+=("$watch_pid")
run kv put cli/w/other o
run kv put cli/w/k "v 1"
run kv del cli/w/k
if wait_until 15 lines_at_least "$WORK/watch.out" 2; then
  sleep 0.3 # would reveal extra lines
fi
kill -TERM "$watch_pid"
wait "$watch_pid"
watch_rc=$?
check "kv watch prints PUT and DELETE lines and exits 0 on SIGTERM" \
  eval 'cmp -s "$WORK/watch.out" <(printf "PUT cli/w/k v\\\\x201\nDELETE cli/w/k\n") && ((watch_rc == 0))'
((watch_rc == 0)) || echo "      watch stdout: $(cat "$WORK/watch.out") stderr: $(cat "$WORK/watch.err")"

# timeout(1) signals both the process and its group: the duplicate must not
# count as an impatient second Ctrl-C.
RC=0
timeout -s TERM 1 "$BIN" --endpoints "$EP" kv watch cli/w/k >"$WORK/out" 2>"$WORK/err" || RC=$?
ERR=$(cat "$WORK/err")
OUT=$(cat "$WORK/out")
check "kv watch under timeout(1) shuts down cleanly" eval '((RC == 124)) && [[ -z $ERR ]]'

"$BIN" --endpoints "$EP" kv watch --prefix cli/w/ --rev $((seed_rev + 1)) --prev-kv >"$WORK/pwatch.out" 2>&1 &
pwatch_pid=$!
BG_PIDS+=("$pwatch_pid")
wait_until 15 lines_at_least "$WORK/pwatch.out" 3
kill -TERM "$pwatch_pid"
wait "$pwatch_pid"
check "kv watch --prefix --prev-kv" \
  eval 'cmp -s "$WORK/pwatch.out" <(printf "PUT cli/w/other o\nPUT cli/w/k v\\\\x201\nDELETE cli/w/k (was: v\\\\x201)\n")'

# The only member stalls (SIGSTOP, as a GC pause or a disk stall) for 6 s:
# the watch says once that etcd is not answering, once that it answers
# again, and delivers what is written after the stall.
run kv put cli/stall/k before
"$BIN" --endpoints "$EP" kv watch cli/stall/k --rev "$OUT" >"$WORK/swatch.out" 2>"$WORK/swatch.err" &
swatch_pid=$!
BG_PIDS+=("$swatch_pid")
wait_until 15 lines_at_least "$WORK/swatch.out" 1 || true
kill -STOP "$ETCD_PID"
sleep 6 # the stall itself
kill -CONT "$ETCD_PID"
run kv put cli/stall/k after
wait_until 15 lines_at_least "$WORK/swatch.out" 2 || true
kill -TERM "$swatch_pid"
wait "$swatch_pid"
swatch_rc=$?
check "kv watch rides out a 6 s stall: every event, exit 0 on SIGTERM" \
  eval 'cmp -s "$WORK/swatch.out" <(printf "PUT cli/stall/k before\nPUT cli/stall/k after\n") && ((swatch_rc == 0))'
check "kv watch said once that etcd was not answering, and once that it answers again" \
  eval '(($(grep -c "etcd is not answering" "$WORK/swatch.err") == 1 && $(grep -c "etcd answers again" "$WORK/swatch.err") == 1))'

run kv put cli/w/k again
latest=$OUT
run kv compact "$latest"
check "kv compact" eval '((RC == 0))'
run kv watch cli/w/k --rev 1
check "kv watch from a compacted revision exits 1 with a message" \
  eval '((RC == 1)) && [[ $ERR == "etcd-recipes: kv watch "* ]]'

# --- durations past the maximum --------------------------------------------------------------

# A wait of 99999999h means "forever" (saturated), not "time out at once".
spawn durholder lock cli/dur
durholder=$PID
wait_until 15 lines_at_least "$WORK/durholder.out" 2
spawn durlock lock cli/dur --timeout 99999999h -- true
durlock=$PID
spawn durpop queue pop cli/durq --timeout 99999999h
durpop=$PID
spawn durbarrier barrier wait cli/durb --parties 2 --timeout 99999999h
durbarrier=$PID
spawn durwork workqueue work cli/durw --idle-exit 99999999h -- true
durwork=$PID
sleep 1.5 # each of them would have given up at once
for p in durlock durpop durbarrier durwork; do
  pid=${!p}
  check "$p with a wait of 99999999h is still waiting" alive "$pid"
  kill -TERM "$pid"
  finish "$pid" "$p"
done
kill -TERM "$durholder"
finish "$durholder" durholder
timeout -k 5 60 "$BIN" --endpoints "$EP" --timeout 99999999h kv put cli/dur-call x >"$WORK/out" 2>"$WORK/err"
RC=$?
ERR=$(cat "$WORK/err")
check "--timeout 99999999h (the per-call deadline) saturates: the call succeeds" eval '((RC == 0))'
# Where "forever" makes no sense, past the maximum is a usage error naming it.
for args in "workqueue push cli/durw x --delay 99999999h" "lease grant 99999999h" "lease grant 876000h1s"; do
  # shellcheck disable=SC2086  # word splitting intended
  run $args
  check "$args: exit 2, the maximum named" eval '((RC == 2)) && [[ $ERR == *"maximum, 876000h (100 years)"* ]]'
done
run lock cli/dur --ttl 99999999999 -- true
check "--ttl past its range: exit 2, the range named" eval '((RC == 2)) && [[ $ERR == *"from 1 to 2147483647"* ]]'
run workqueue size cli/durw
check "the refused push added nothing" eval '((RC == 0)) && [[ $OUT == 0 ]]'

# --- a CMD that cannot be run ------------------------------------------------------------

# Every command that runs CMD refuses one it cannot run before it waits or
# writes anything: at once even when what it would wait for is taken, and
# the revision shows that nothing was written (each probe is one put).
probe() { "$BIN" --endpoints "$EP" kv put cli/probe x; }
printf '#!/bin/sh\n' >"$WORK/not-executable"
chmod 644 "$WORK/not-executable"
spawn holder lock cli/busy
holder=$PID
INTERRUPTIBLE=1 spawn leader elect cli/busy-election --value me
leader=$PID
wait_until 15 eval 'lines_at_least "$WORK/holder.out" 2 && [[ -s $WORK/leader.out ]]'
for cmd_args in "lock cli/busy --timeout 20s" "semaphore cli/sem 1 --timeout 20s" "rwlock cli/rw write --timeout 20s" \
  "elect cli/busy-election --value x --timeout 20s" "transient cli/tk v" \
  "discovery register svc --address h --port 80 --id i1"; do
  for bad in /nonexistent/cmd no-such-program-anywhere "$WORK/not-executable" "$WORK"; do
    want=127
    [[ $bad == "$WORK"* ]] && want=126
    before=$(probe)
    start=$SECONDS
    # shellcheck disable=SC2086  # word splitting intended
    run $cmd_args -- "$bad" arg
    after=$(probe)
    check "$cmd_args -- ${bad/#$WORK/WORK}: exit $want at once, nothing written" \
      eval '((RC == want && SECONDS - start < 10 && after == before + 1)) && [[ $ERR == *"cannot run $bad"* ]]'
  done
done
kill -TERM "$holder" "$leader"
finish "$holder" holder
finish "$leader" leader

# --- cluster --------------------------------------------------------------------------------

run status
check "status prints a table row for the endpoint" \
  eval '((RC == 0)) && [[ $OUT == "ENDPOINT"* ]] && grep "^$EP " "$WORK/out" | grep -F " $ETCD_VERSION " | grep -q " true"'
run status --json
check "status --json" eval '((RC == 0)) && [[ $OUT == *"\"endpoint\":\"$EP\""* && $OUT == *"\"is_leader\":true"* ]]'
timeout -k 5 60 "$BIN" --endpoints "$EP,127.0.0.1:1" --timeout 2s -w json status >"$WORK/out" 2>"$WORK/err"
RC=$?
OUT=$(cat "$WORK/out")
ERR=$(cat "$WORK/err")
check "status -w json lists an endpoint that did not answer, with its error (exit 1)" \
  eval '((RC == 1)) && [[ $OUT == "[{"*"\"endpoint\":\"$EP\""*"{\"endpoint\":\"127.0.0.1:1\",\"error\":\""*"unreachable"*"}]" ]]'
run member list
check "member list" eval '((RC == 0)) && [[ $OUT == *cli-test* && $OUT == *"http://127.0.0.1:"* ]]'

RC=0
timeout 60 "$BIN" --endpoints 127.0.0.1:1 --timeout 500ms kv get x >"$WORK/out" 2>"$WORK/err" || RC=$?
OUT=$(cat "$WORK/out")
ERR=$(cat "$WORK/err")
check "an unreachable endpoint fails with exit 1 and etcd-recipes: <what>: <status>" \
  eval '((RC == 1)) && [[ $ERR == "etcd-recipes: kv get: "* ]]'

ETCD_ENDPOINTS=$EP timeout 60 "$BIN" kv put cli/env yes >/dev/null 2>&1
RC=$?
check "ETCD_ENDPOINTS supplies the endpoints" eval '((RC == 0))'

# etcdctl's environment, below our own names and the flags. The built-in
# default (127.0.0.1:2379) is wrong here: only the environment can lead the
# tool to the private etcd.
# envrun VAR=VALUE... -- ARGS...: the tool with that environment, no --endpoints.
envrun() {
  local vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  timeout -k 5 60 env "${vars[@]}" "$BIN" "$@" >"$WORK/out" 2>"$WORK/err"
  RC=$?
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
}
envrun ETCDCTL_ENDPOINTS="http://$EP" -- kv put cli/envctl yes
check "ETCDCTL_ENDPOINTS supplies the endpoints" eval '((RC == 0)) && [[ $("$BIN" --endpoints "$EP" kv get cli/envctl) == yes ]]'
envrun ETCD_ENDPOINTS="$EP" ETCDCTL_ENDPOINTS=127.0.0.1:1 -- --timeout 2s kv get cli/envctl
check "ETCD_ENDPOINTS beats ETCDCTL_ENDPOINTS" eval '((RC == 0)) && [[ $OUT == yes ]]'
envrun ETCD_ENDPOINTS=127.0.0.1:1 ETCDCTL_ENDPOINTS=127.0.0.1:1 -- --endpoints "$EP" kv get cli/envctl
check "--endpoints beats both" eval '((RC == 0)) && [[ $OUT == yes ]]'
envrun ETCDCTL_ENDPOINTS="$EP" -- --help
check "--help says the endpoints' default came from ETCDCTL_ENDPOINTS" \
  eval '((RC == 0)) && [[ $OUT == *"=$EP"* && $OUT == *"default now from ETCDCTL_ENDPOINTS"* ]]'
envrun -- --help
check "--help without the environment says which variables it reads" \
  eval '((RC == 0)) && [[ $OUT == *"=127.0.0.1:2379"* && $OUT == *"default: ETCD_ENDPOINTS, then ETCDCTL_ENDPOINTS if set"* ]]'
envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_COMMAND_TIMEOUT=bogus -- kv get cli/envctl
check "a bad ETCDCTL_COMMAND_TIMEOUT: exit 2, named" eval '((RC == 2)) && [[ $ERR == *"ETCDCTL_COMMAND_TIMEOUT: not a positive duration: bogus"* ]]'
envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_COMMAND_TIMEOUT=bogus -- --timeout 5s kv get cli/envctl
check "--timeout beats ETCDCTL_COMMAND_TIMEOUT" eval '((RC == 0)) && [[ $OUT == yes ]]'
envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_DIAL_TIMEOUT=bogus -- kv get cli/envctl
check "a bad ETCDCTL_DIAL_TIMEOUT: exit 2, named" eval '((RC == 2)) && [[ $ERR == *"ETCDCTL_DIAL_TIMEOUT: not a positive duration: bogus"* ]]'
printf 'not a certificate\n' >"$WORK/bogus.pem"
envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_CACERT="$WORK/bogus.pem" -- kv get cli/envctl
check "ETCDCTL_CACERT is read: a file that is not PEM is named by its variable" \
  eval '((RC == 2)) && [[ $ERR == *"ETCDCTL_CACERT $WORK/bogus.pem: not a PEM file"* ]]'
envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_CERT="$WORK/bogus.pem" -- kv get cli/envctl
check "ETCDCTL_CERT without a key: exit 2, both named" \
  eval '((RC == 2)) && [[ $ERR == *"ETCDCTL_CERT and --key must be given together"* ]]'
envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_CERT="$WORK/bogus.pem" ETCDCTL_KEY="$WORK/bogus.pem" -- kv get cli/envctl
check "ETCDCTL_CERT and ETCDCTL_KEY are read" eval '((RC == 2)) && [[ $ERR == *"ETCDCTL_CERT $WORK/bogus.pem: not a PEM file"* ]]'

# --- authentication (last: it changes the server for every later call) ----------------------

if [[ -n $ETCDCTL ]]; then
  ctl() { ETCDCTL_API=3 timeout 30 "$ETCDCTL" --endpoints "$EP" "$@" >>"$WORK/etcdctl.log" 2>&1; }
  if ctl user add root:s3cret && ctl user grant-role root root && ctl auth enable; then
    run --user root:s3cret kv put cli/authed yes
    check "--user NAME:PASSWORD authenticates" eval '((RC == 0))'
    ETCD_PASSWORD=s3cret timeout 60 "$BIN" --endpoints "$EP" --user root kv get cli/authed >"$WORK/out" 2>"$WORK/err"
    RC=$?
    OUT=$(cat "$WORK/out")
    ERR=$(cat "$WORK/err")
    check "--user NAME takes the password from ETCD_PASSWORD" eval '((RC == 0)) && [[ $OUT == yes ]]'
    run --user root:wrong kv get cli/authed
    check "a wrong password exits 1 without echoing it" \
      eval '((RC == 1)) && [[ $ERR == "etcd-recipes: kv get: "* && $ERR != *wrong* ]]'
    run kv get cli/authed
    check "no credentials on an auth-enabled server exits 1" eval '((RC == 1)) && [[ $ERR == "etcd-recipes: kv get: "* ]]'
    run --user root kv get cli/authed
    check "--user without a password is a usage error" eval '((RC == 2))'
    envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_USER=root ETCDCTL_PASSWORD=s3cret -- kv get cli/authed
    check "ETCDCTL_USER and ETCDCTL_PASSWORD authenticate" eval '((RC == 0)) && [[ $OUT == yes ]]'
    envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_USER=root:s3cret -- kv get cli/authed
    check "ETCDCTL_USER=NAME:PASSWORD authenticates" eval '((RC == 0)) && [[ $OUT == yes ]]'
    envrun ETCDCTL_ENDPOINTS="$EP" ETCDCTL_USER=root ETCDCTL_PASSWORD=wrong ETCD_PASSWORD=s3cret -- kv get cli/authed
    check "ETCD_PASSWORD beats ETCDCTL_PASSWORD" eval '((RC == 0)) && [[ $OUT == yes ]]'
  else
    fail "enable authentication with etcdctl" "$(cat "$WORK/etcdctl.log")"
  fi
else
  echo "SKIP: authentication checks (no etcdctl)"
fi

# --- demo -----------------------------------------------------------------------------------

# demo_started FILE: sets DEMO_ETCD_PIDS (every etcd pid the demo named: at
# the start, a restarted member's, at the cleanup) and DEMO_DIR from the
# demo's output.
demo_started() {
  local line
  line=$(grep -m1 -oE 'etcd pids? [0-9, ]+ serving .*, data in .*' "$1" 2>/dev/null) || return 1
  DEMO_DIR=${line##*data in }
  DEMO_ETCD_PIDS=$(grep -oE 'etcd pids? [0-9, ]+ (serving|stopped)|restarted \(pid [0-9]+\)' "$1" | grep -oE '[0-9]+' |
    sort -u | tr '\n' ' ')
}
all_dead() {
  local p
  for p in "$@"; do dead "$p" || return 1; done
}
# demo_cleaned: every etcd the demo started is gone, and its directory.
demo_cleaned() {
  # shellcheck disable=SC2086  # one pid per word
  [[ -n $DEMO_ETCD_PIDS && -n $DEMO_DIR ]] && wait_until 5 all_dead $DEMO_ETCD_PIDS && [[ ! -e $DEMO_DIR ]]
}
# view_shows REGEX: a `view:` line of the demo matches REGEX.
view_shows() { grep -qE "\] +view: .*$1" "$WORK/demo.out"; }
# secs_since T0: seconds since `date +%s%N` printed T0, with a decimal.
secs_since() { awk -v t0="$1" -v t1="$(date +%s%N)" 'BEGIN { printf "%.1f", (t1 - t0) / 1e9 }'; }
under_60() { awk -v s="$1" 'BEGIN { exit !(s < 60) }'; }
# run_demo OUT [ARGS...]: runs the demo into OUT (stderr into OUT.err),
# checks that it finished OK in under 60 s (printing its output if not),
# and sets DEMO_ETCD_PIDS / DEMO_DIR for demo_cleaned.
run_demo() {
  local out=$1 rc secs t0
  shift
  t0=$(date +%s%N)
  timeout -k 5 180 "$BIN" demo "$@" >"$out" 2>"$out.err"
  rc=$?
  secs=$(secs_since "$t0")
  echo "      (demo${*:+ $*} took $secs s)"
  DEMO_ETCD_PIDS=""
  DEMO_DIR=""
  demo_started "$out"
  check "demo${*:+ $*} exits 0 and ends with 'demo finished OK', in under 60 s" \
    eval '((rc == 0)) && [[ $(tail -1 "$out") == *"] demo finished OK" ]] && under_60 "$secs"'
  if ((rc != 0)); then
    sed 's/^/      | /' "$out" "$out.err"
  fi
}

run_demo "$WORK/demo.out"
check "demo showed a watch event written by another process" \
  eval 'grep -q "watch: PUT demo/from-child = hello from another process" "$WORK/demo.out"'
# Every recipe family has its step (the demo finished OK: each one passed).
while IFS='|' read -r family title; do
  check "demo covers the $family" eval 'grep -qE "\] step [0-9]+/[0-9]+: $title" "$WORK/demo.out"'
done <<'FAMILIES'
lock|lock handover between processes
semaphore|a semaphore admits two processes of three
read-write lock|.*a read-write lock shares reading
election|leader election: the leader is killed
barrier|a barrier releases a group
cache|a cache follows what other processes write
queue|queues: each item to exactly one consumer
priority queue|.*a priority queue serves the most urgent first
work queue|a work queue survives a worker killed mid-job
counter|a counter: processes and threads add at once
transient keys|transient keys: present while their owner lives
service discovery|service discovery: a killed instance leaves
FAMILIES
check "demo: the counter's adds were exact" eval 'grep -q "demo/hits = 35: no add lost" "$WORK/demo.out"'
check "demo: a killed worker's transient key expired, a clean exit's went at once" \
  eval 'grep -q "demo/workers/w1 gone .* after the kill" "$WORK/demo.out" &&
    grep -q "demo/workers/w2 was gone at once" "$WORK/demo.out"'
# The live view (not a terminal here: `view:` lines). Each state checked
# lasts well over the view's 250 ms between lines.
check "demo view: the election's leader" eval 'view_shows "leader: node-A \(term [0-9]+\), 1 waiting"'
check "demo view: the lock's holder and fencing token" eval 'view_shows "lock: [^;]+ \(token [0-9]+\), 1 waiting"'
check "demo view: the work queue's depth, in flight and dead letters" \
  eval 'view_shows "work queue: [1-9] ready, [0-9] in flight, 0 dead letters"'
check "demo view: the counter's value" eval 'view_shows "counter: 35"'
check "demo view: the registered services" eval 'view_shows "services: demo-api: api-1, api-2"'
check "demo view: the transient keys" eval 'view_shows "transient: w1, w2"'
check "demo view: at most one line every 250 ms" eval 'grep -oE "^\[ *[0-9.]+s\] +view:" "$WORK/demo.out" |
    tr -d "[]s" | awk "NR > 1 && \$1 - last < 0.245 { bad = 1 } { last = \$1 } END { exit bad }"'
check "demo leaves no etcd running and removes its directory" demo_cleaned

# With three members, the raft leader member is killed while recipes run.
run_demo "$WORK/demo3.out" --members 3 --linger 1s
check "demo --linger 1s: etcd stays up 1 s after the scenes, then the cleanup" \
  eval 'grep -qE "\] the scenes are done; etcd stays up for 1s" "$WORK/demo3.out"'
check "demo --members 3 started three members" eval '(($(wc -w <<<"$DEMO_ETCD_PIDS") >= 3))'
check "demo --members 3 killed the raft leader member; the others elected one" \
  eval 'grep -qE "SIGKILL etcd member m[0-2], the raft leader" "$WORK/demo3.out" &&
    grep -qE "m[0-2] is the raft leader [0-9]+ ms after the kill" "$WORK/demo3.out"'
check "demo --members 3: the lock, the leadership and the counter carried on" \
  eval 'grep -q "H still holds demo/lock with the same key" "$WORK/demo3.out" &&
    grep -qE "adds, [1-9][0-9]* of them after the kill: .* every add exactly once" "$WORK/demo3.out"'
check "demo --members 3 restarted the killed member" eval 'grep -qE "etcd member m[0-2] restarted" "$WORK/demo3.out"'
check "demo --members 3 leaves no etcd running and removes its directory" demo_cleaned

# Interrupted mid-scenario, while child processes run, the demo still
# cleans up (here without the view: --no-view), its dashboard included.
dport=$((20000 + RANDOM % 20000))
while listening "$dport"; do dport=$((20000 + RANDOM % 20000)); done
"$BIN" demo --no-view --dashboard "127.0.0.1:$dport" >"$WORK/idemo.out" 2>"$WORK/idemo.err" &
idemo_pid=$!
BG_PIDS+=("$idemo_pid")
DEMO_ETCD_PIDS=""
DEMO_DIR=""
if wait_until 60 file_has "$WORK/idemo.out" "process B (pid [0-9]*) started: etcd-recipes lock"; then
  demo_started "$WORK/idemo.out"
  # The dashboard of demo/ serves while the scenes run.
  (exec 3<>"/dev/tcp/127.0.0.1/$dport" && printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
    timeout 5 cat <&3) >"$WORK/idemo.metrics" 2>/dev/null
  kill -TERM "$idemo_pid"
fi
wait_until 30 dead "$idemo_pid"
wait "$idemo_pid"
idemo_rc=$?
demo_children=$(grep -oE '\(pid [0-9]+\)' "$WORK/idemo.out" | grep -oE '[0-9]+' | tr '\n' ' ')
check "demo on SIGTERM exits 143 after cleaning up" \
  eval '((idemo_rc == 143)) && grep -q "cleanup: etcd pid .* removed" "$WORK/idemo.out"'
check "an interrupted demo leaves no etcd running and removes its directory" demo_cleaned
# shellcheck disable=SC2086  # one pid per word
check "an interrupted demo leaves none of its processes running" \
  eval '[[ -n $demo_children ]] && all_dead $demo_children'
check "demo --no-view prints no view" eval '! grep -q "view:" "$WORK/idemo.out"'
check "demo --dashboard: the dashboard of demo/ served while the scenes ran, said with its address" \
  eval 'grep -q "dashboard (pid [0-9]*): open http://127.0.0.1:$dport/" "$WORK/idemo.out" &&
    grep -q "etcd_recipes_exporter_up{prefix=\"demo\"} 1" "$WORK/idemo.metrics"'
check "... and is gone with the demo" eval '! listening $dport'
if ((idemo_rc != 143)); then
  sed 's/^/      | /' "$WORK/idemo.out" "$WORK/idemo.err"
fi

echo "$passed passed, $failed failed"
((failed == 0))
