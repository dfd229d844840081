#!/usr/bin/env bash
# One lock name shared by three implementations: `etcd-recipes lock` (this
# library's DistributedMutex), `etcdctl lock` (Go's concurrency.Mutex) and the
# Kotlin library's DistributedMutex (com.pambrose:etcd-recipes-core, through
# etcd's Lock RPC), run by the Kotlin peer's `lock` mode.
#
#   bash tests/cli/kotlin_lock_test.sh PATH/TO/etcd-recipes PATH/TO/etcd-recipes-bench
#
# The bench builds the Kotlin peer (`--kotlin-peer-jar`); when it cannot
# (no java/mvn, or the library does not resolve from the Maven repositories
# this machine reaches) the test exits 77, CTest's skip code, saying why.
# ETCD_RECIPES_KT_VERSION picks another build of the library, as for the bench.
#
# Every holder appends "start TAG" and "end TAG" to one log around its hold;
# the checks read the order of those lines, never timing alone.

# shellcheck disable=SC2016,SC2034

set -u

TEST_NAME=kotlin-lock-test
POLL_INTERVAL=0.05
BENCH=${2:?usage: $(basename "$0") PATH/TO/etcd-recipes PATH/TO/etcd-recipes-bench}
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -z $ETCDCTL ]]; then
  echo "skipped: no etcdctl (set ETCD_RECIPES_ETCDCTL)" >&2
  exit 77
fi
JAVA=$(command -v java || true)
JAR=$(timeout -k 5 600 "$BENCH" --kotlin-peer-jar 2>"$WORK/jar.err")
rc=$?
if ((rc != 0)); then
  cat "$WORK/jar.err" >&2
  ((rc == 77)) && exit 77
  echo "FAIL: building the Kotlin peer (exit $rc)"
  exit 1
fi
start_etcd_or_skip

ctl() { ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" "$@"; }
LOG=$WORK/holds.log
: >"$LOG"

# Holders in the background; each logs around a hold of SECS.
kotlin_holder() { # kotlin_holder NAME TAG SECS [RELEASE_FILE]: holds SECS, or until RELEASE_FILE exists
  "$JAVA" -jar "$JAR" lock --endpoints "$EP" --name "$1" --log "$LOG" --tag "$2" \
    --hold-ms "$(awk -v s="$3" 'BEGIN { printf "%d", s * 1000 }')" --timeout-ms 90000 ${4:+--release-file "$4"} \
    >"$WORK/$2.out" 2>"$WORK/$2.err" &
  PID=$!
  BG_PIDS+=("$PID")
}
ours_holder() { # ours_holder NAME TAG SECS
  "$BIN" --endpoints "$EP" --timeout 60s lock "$1" -- \
    sh -c "echo 'start $2' >>'$LOG'; sleep $3; echo 'end $2' >>'$LOG'" >"$WORK/$2.out" 2>"$WORK/$2.err" &
  PID=$!
  BG_PIDS+=("$PID")
}
etcdctl_holder() { # etcdctl_holder NAME TAG SECS
  ctl --command-timeout=60s lock "$1" -- sh -c "echo 'start $2' >>'$LOG'; sleep $3; echo 'end $2' >>'$LOG'" \
    >"$WORK/$2.out" 2>"$WORK/$2.err" &
  PID=$!
  BG_PIDS+=("$PID")
}
# Keys under NAME/: one per holder or waiter, in all three implementations.
lock_keys() { ctl get --prefix "$1/" --keys-only 2>/dev/null | grep -c .; }
lock_keys_are() { [[ $(lock_keys "$1") == "$2" ]]; }
# exclusive N: the log is N start/end pairs of one tag each, never interleaved.
exclusive() {
  awk -v n="$1" '
    NR % 2 == 1 { if ($1 != "start") exit 1; t = $2 }
    NR % 2 == 0 { if ($1 != "end" || $2 != t) exit 1 }
    END { if (NR != 2 * n) exit 1 }' "$LOG"
}
order() { awk '$1 == "start" { printf "%s%s", sep, $2; sep = " " } END { print "" }' "$LOG"; }
wait_all() { # wait_all PID...: each must exit 0 within 90 s
  local p ok=0
  for p in "$@"; do
    local deadline=$((SECONDS + 90))
    while alive "$p" && ((SECONDS < deadline)); do sleep 0.05; done
    alive "$p" && kill -KILL "$p"
    wait "$p" || ok=1
  done
  return $ok
}

# --- mutual exclusion: three holders of each kind at once ---------------------------

pids=()
for i in 1 2 3; do
  kotlin_holder /locks/shared "kt$i" 0.3
  pids+=("$PID")
  ours_holder /locks/shared "ours$i" 0.3
  pids+=("$PID")
  etcdctl_holder /locks/shared "ctl$i" 0.3
  pids+=("$PID")
done
if wait_all "${pids[@]}"; then pass "nine holders of three kinds all held and released"; else
  fail "nine holders of three kinds all held and released" "$(tail -n 5 "$WORK"/*.err)"
fi
if exclusive 9; then pass "their holds never overlapped"; else fail "their holds never overlapped" "$(cat "$LOG")"; fi
if wait_until 10 lock_keys_are /locks/shared 0; then pass "no key left under the name"; else
  fail "no key left under the name" "$(ctl get --prefix /locks/shared/ --keys-only)"
fi

# --- FIFO hand-over across the three ----------------------------------------------
# Queue kt1 (holds until all the others queued), ours1, ctl1, kt2, ours2 in
# that order, each one only once the one before it is waiting (its key is
# under the name): the lowest create revision holds, whichever implementation
# wrote it.

: >"$LOG"
pids=()
n=0
for who in kotlin:kt1:60 ours:ours1:0.3 etcdctl:ctl1:0.3 kotlin:kt2:0.3 ours:ours2:0.3; do
  IFS=: read -r kind tag secs <<<"$who"
  "${kind}_holder" /locks/fifo "$tag" "$secs" "$WORK/release-kt1"
  pids+=("$PID")
  n=$((n + 1))
  if ! wait_until 30 lock_keys_are /locks/fifo "$n"; then
    fail "$tag queued (key $n under the name)" "$(ctl get --prefix /locks/fifo/ --keys-only)"
    break
  fi
done
touch "$WORK/release-kt1"
if wait_all "${pids[@]}"; then pass "five queued holders all held and released"; else
  fail "five queued holders all held and released" "$(tail -n 5 "$WORK"/*.err)"
fi
if exclusive 5; then pass "one at a time"; else fail "one at a time" "$(cat "$LOG")"; fi
got=$(order)
if [[ $got == "kt1 ours1 ctl1 kt2 ours2" ]]; then pass "granted in the order they queued"; else
  fail "granted in the order they queued" "order: $got"
fi

# --- ours holds; the Kotlin mutex waits and gives up at its timeout ---------------

: >"$LOG"
ours_holder /locks/busy ours 3
holder=$PID
wait_until 20 file_has "$LOG" "start ours" || fail "our holder started"
"$JAVA" -jar "$JAR" lock --endpoints "$EP" --name /locks/busy --log "$LOG" --tag kt --hold-ms 0 --timeout-ms 500 \
  >"$WORK/kt-busy.out" 2>"$WORK/kt-busy.err"
RC=$?
if ((RC == 3)) && ! file_has "$LOG" "start kt"; then pass "the Kotlin mutex is not granted while ours holds"; else
  fail "the Kotlin mutex is not granted while ours holds" "rc=$RC" "$(cat "$LOG")"
fi
wait_all "$holder" || fail "our holder released"

echo "$passed passed, $failed failed"
((failed == 0))
