# Shared by the CLI's end-to-end tests: a private etcd on free loopback ports
# in a temporary directory, PASS/FAIL bookkeeping, polling helpers, and the
# tool run in the background (spawn/finish) with key counting.
# Source it after setting TEST_NAME; the test's first argument is the
# etcd-recipes binary (BIN).
# shellcheck shell=bash disable=SC2034,SC2016

BIN=${1:?usage: $(basename "$0") PATH/TO/etcd-recipes}
if [[ ! -x $BIN ]]; then
  echo "not an executable: $BIN" >&2
  exit 2
fi
BIN=$(realpath "$BIN")

# group_alive PGID: whether any process of the group still runs (not a
# zombie: it runs nothing). Reads the fields after the command's closing
# parenthesis in /proc/PID/stat: state ppid pgrp ...
group_alive() {
  local stat rest state pgrp
  for stat in /proc/[0-9]*/stat; do
    rest=$(sed 's/.*) //' "$stat" 2>/dev/null) || continue
    read -r state _ pgrp _ <<<"$rest"
    [[ $pgrp == "$1" && $state != Z ]] && return 0
  done
  return 1
}
pgid_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f3; }

# The etcd to start: $ETCD_RECIPES_ETCD (e.g. from `./dev.sh etcd 3.6`), else
# etcd on PATH. etcdctl: $ETCD_RECIPES_ETCDCTL, else the one next to $ETCD,
# else etcdctl on PATH; empty if there is none (its checks are skipped).
ETCD=${ETCD_RECIPES_ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
if [[ -n ${ETCD_RECIPES_ETCDCTL:-} ]]; then
  ETCDCTL=$ETCD_RECIPES_ETCDCTL
elif [[ -x $(dirname "$ETCD")/etcdctl ]]; then
  ETCDCTL=$(dirname "$ETCD")/etcdctl
else
  ETCDCTL=$(command -v etcdctl || true)
fi
ETCD_VERSION=$("$ETCD" --version 2>/dev/null | sed -n 's/^etcd Version: //p')

# The tool's environment defaults (endpoints, credentials, timeouts) come
# from each test, never from the caller's shell.
for _v in $(compgen -e); do
  if [[ ($_v == ETCDCTL_* && $_v != ETCDCTL_API) || $_v == ETCD_ENDPOINTS || $_v == ETCD_PASSWORD ]]; then
    unset "$_v"
  fi
done
unset _v

# hermetic CMD... &: runs CMD in the background without the ETCD_* variables,
# which etcd would read as flags. Only in the background: the function's
# subshell execs env, which execs CMD, so $! is CMD's own pid and signals to
# $! (SIGSTOP, SIGKILL) reach CMD itself.
hermetic() {
  local v unset=()
  for v in $(compgen -e); do
    [[ $v == ETCD_* ]] && unset+=(-u "$v")
  done
  exec env "${unset[@]}" "$@"
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/etcd-recipes-$TEST_NAME.XXXXXX")
ETCD_PID=""
BG_PIDS=()

cleanup() {
  local p
  for p in "${BG_PIDS[@]}" $ETCD_PID; do
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
pass() {
  passed=$((passed + 1))
  echo "PASS: $1"
}
# fail NAME [DETAIL...]
fail() {
  failed=$((failed + 1))
  echo "FAIL: $1"
  shift
  local line
  for line in "$@"; do printf '      %s\n' "$line"; done
}

# run ARGS...: the tool against the private etcd; sets RC, OUT, ERR (OUT and
# ERR without trailing newlines; the exact bytes are in $WORK/out, $WORK/err).
run() {
  timeout -k 5 60 "$BIN" --endpoints "$EP" --timeout 5s "$@" >"$WORK/out" 2>"$WORK/err"
  RC=$?
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
}
details() { echo "rc=$RC" "stdout: $OUT" "stderr: $ERR"; }

# check NAME CONDITION...: passes if the command CONDITION succeeds.
check() {
  local name=$1
  shift
  if "$@"; then
    pass "$name"
  else
    local -a d
    mapfile -t d < <(details)
    fail "$name" "check: $*" "${d[@]}"
  fi
}

# wait_until SECONDS COMMAND...: polls COMMAND every 0.1 s.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS >= deadline)) && return 1
    sleep "${POLL_INTERVAL:-0.1}"
  done
}
lines_at_least() { [[ -f $1 ]] && (($(wc -l <"$1") >= $2)); }
file_has() { grep -q -- "$2" "$1" 2>/dev/null; }
# alive PID: whether process PID runs. A zombie runs nothing: a process whose
# parent died is reaped by PID 1, and in a container PID 1 may never reap it.
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $state && $state != Z ]]
}
dead() { ! alive "$1"; }

# --- the tool in the background, and keys ----------------------------------------

# spawn NAME ARGS...: the tool in the background, output in $WORK/NAME.out
# and .err; sets PID. With INTERRUPTIBLE=1 it starts with the default SIGINT
# disposition: background commands of a script inherit SIGINT ignored, and
# the tool keeps ignoring what it inherited ignored (like nohup).
if env --default-signal=INT true 2>/dev/null; then
  DEFAULT_INT=(env --default-signal=INT)
else
  DEFAULT_INT=()
fi
spawn() {
  local name=$1
  shift
  if ((${INTERRUPTIBLE:-0})); then
    ((${#DEFAULT_INT[@]})) || set -m # job control: background jobs get SIGINT unless ignored at entry
    "${DEFAULT_INT[@]}" "$BIN" --endpoints "$EP" --timeout 5s "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PID=$!
    set +m
  else
    "$BIN" --endpoints "$EP" --timeout 5s "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PID=$!
  fi
  BG_PIDS+=("$PID")
}
# ignores PID SIG: whether process PID ignores signal number SIG.
ignores() {
  local mask
  mask=$(awk '/^SigIgn:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
  [[ -n $mask ]] && (((16#$mask >> ($2 - 1)) & 1))
}
# finish PID NAME: waits for a spawned process; sets RC, OUT, ERR from it.
finish() {
  local deadline=$((SECONDS + 60))
  while alive "$1" && ((SECONDS < deadline)); do sleep 0.05; done
  alive "$1" && kill -KILL "$1"
  wait "$1"
  RC=$?
  OUT=$(cat "$WORK/$2.out")
  ERR=$(cat "$WORK/$2.err")
}

# keys PREFIX: how many keys there are under PREFIX.
keys() { "$BIN" --endpoints "$EP" kv get --prefix "$1" --keys-only 2>/dev/null | grep -c .; }
keys_are() { [[ $(keys "$1") == "$2" ]]; }

health() {
  # Plain HTTP over bash's /dev/tcp, so the test needs neither curl nor etcdctl.
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    timeout 2 cat <&3
  ) 2>/dev/null | grep -q '"health":"true"'
}

start_etcd() {
  local cport pport
  for _ in 1 2 3 4 5; do
    cport=$((20000 + RANDOM % 20000))
    pport=$((40000 + RANDOM % 20000))
    rm -rf "$WORK/etcd"
    hermetic "$ETCD" --name "$TEST_NAME" --data-dir "$WORK/etcd" \
      --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
      --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
      --initial-cluster "$TEST_NAME=http://127.0.0.1:$pport" --initial-cluster-state new \
      --heartbeat-interval 25 --election-timeout 250 >"$WORK/etcd.log" 2>&1 &
    ETCD_PID=$!
    EP="127.0.0.1:$cport"
    # A member that exits at once most likely lost a port race: try others.
    if wait_until 20 eval 'dead $ETCD_PID || health $cport' && alive "$ETCD_PID"; then
      return 0
    fi
    kill -KILL "$ETCD_PID" 2>/dev/null
    wait "$ETCD_PID" 2>/dev/null
    ETCD_PID=""
  done
  return 1
}

# Starts the private etcd, or exits 77 (CTest's skip code) if it cannot.
start_etcd_or_skip() {
  if ! start_etcd; then
    echo "cannot start $ETCD (etcd ${ETCD_VERSION:-?}); its log:" >&2
    tail -20 "$WORK/etcd.log" >&2
    exit 77
  fi
  echo "etcd ${ETCD_VERSION:-(unknown version)} ($ETCD) pid $ETCD_PID at $EP"
}

# python_with MODULE...: sets PY to a python3 that imports every MODULE
# (Debian's /usr/bin/python3 first: dev.sh installs the modules there; a
# python3 earlier on PATH may lack them); empty if there is none.
python_with() {
  local candidate imports
  imports=$(printf 'import %s; ' "$@")
  PY=""
  for candidate in /usr/bin/python3 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c "$imports" 2>/dev/null; then
      PY=$candidate
      return 0
    fi
  done
  return 1
}

# start_server NAME ARGS...: the tool with ARGS in the background (a
# command that serves HTTP: exporter, dashboard), until it says where it
# serves; sets PID and PORT (returns 1 if it did not serve).
start_server() {
  local name=$1
  shift
  "$BIN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PID=$!
  BG_PIDS+=("$PID")
  PORT=""
  wait_until "${SERVER_START_SECONDS:-30}" eval "file_has '$WORK/$name.err' ': serving http' || dead $PID" || return 1
  PORT=$(sed -n 's|.*: serving https\{0,1\}://.*:\([0-9][0-9]*\)$|\1|p' "$WORK/$name.err" | head -1)
  [[ -n $PORT ]]
}
# stop_server PID: SIGTERM, then waits (at most 20 s); sets RC.
stop_server() {
  kill -TERM "$1" 2>/dev/null
  wait_until 20 dead "$1" || kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  RC=$?
}
# listening PORT: whether something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# report_lines FILE: counts the PASS:/FAIL: lines a helper program wrote
# to FILE as this test's own checks, and prints its other lines.
report_lines() {
  local line
  while IFS= read -r line; do
    case $line in
      PASS:*) pass "${line#PASS: }" ;;
      FAIL:*) fail "${line#FAIL: }" ;;
      *) echo "$line" ;;
    esac
  done <"$1"
}

# spawn_contended_state P: recipe state made by the tool under P, each
# running until the test ends: a semaphore P/sem of 2 with 3 contenders, an
# election P/leader led by "node-a", a count barrier P/start of 3 with 2
# parties waiting, and a service P/services/api with instance a1.
spawn_contended_state() {
  local p=$1 i
  for i in 1 2 3; do spawn "sem$i" semaphore "$p/sem" 2 --ttl 10 -- sleep 600; done
  wait_until 10 keys_are "$p/sem/holders/" 3 || fail "the semaphore's contenders did not all arrive"
  spawn leader elect "$p/leader" --value node-a --ttl 10 -- sleep 600
  wait_until 10 keys_are "$p/leader/" 1 || fail "no leader"
  for i in 1 2; do spawn "party$i" barrier wait "$p/start" --parties 3 --ttl 10 --timeout 600s; done
  wait_until 10 keys_are "$p/start/parties/" 2 || fail "the parties did not arrive"
  spawn svc discovery register api --base "$p/services" --id a1 --address 127.0.0.1 --port 8080 -- sleep 600
  wait_until 10 keys_are "$p/services/api/" 1 || fail "the service was not registered"
}
