#!/usr/bin/env bash
# End-to-end test of `etcd-recipes dashboard PREFIX...`: recipe state made
# with the tool itself (a lock with waiters, a semaphore, an election, a work
# queue with an item in flight and a dead letter, a queue, a count barrier, a
# counter, a service), two dashboards on it (read-only, and with
# --allow-actions) driven in headless Chromium by dashboard_browser.py (what
# the page shows, a lock's holder within 1 s, update latency over 200
# changes, the guarded actions), then what the server promises without a
# browser: the stream, the actions' refusals, /metrics from the same state,
# the serving rules, and SIGTERM with a page open.
#
#   bash tests/cli/dashboard_test.sh PATH/TO/etcd-recipes [ARTIFACTS_DIR]
#
# Screenshots go to ARTIFACTS_DIR (default: a temporary directory, removed).
# One PASS/FAIL line per check, "N passed, M failed" at the end; exits 1 if
# anything failed, 77 if etcd cannot be started or there is no Chromium.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=dashboard-test
POLL_INTERVAL=0.05
HERE=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tests/cli/lib.sh
source "$HERE/lib.sh"
ARTIFACTS=${2:-$WORK/artifacts}
mkdir -p "$ARTIFACTS"

# Debian's Selenium, Chromium and ChromeDriver (dev.sh installs them).
if ! python_with selenium prometheus_client.parser || [[ ! -x ${CHROMIUM:-/usr/bin/chromium} ]] ||
  [[ ! -x ${CHROMEDRIVER:-/usr/bin/chromedriver} ]]; then
  echo "SKIP: no Chromium, ChromeDriver or python3 with selenium (apt-get install chromium chromium-driver python3-selenium)"
  exit 77
fi

start_etcd_or_skip

# post URL BODY [HEADER]: the HTTP status of a POST, and its body on one line.
post() {
  "$PY" - "$@" <<'EOF'
import sys, urllib.request, urllib.error
url, body = sys.argv[1], sys.argv[2].encode()
headers = {"Content-Type": "application/json"}
if len(sys.argv) > 3:
    k, v = sys.argv[3].split(": ", 1)
    headers[k] = v
try:
    with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10) as r:
        status, text = r.status, r.read().decode()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read().decode()
print(status, " ".join(text.split()))
EOF
}

# --- usage -----------------------------------------------------------------------------

run dashboard
check "dashboard without PREFIX is a usage error (exit 2)" eval '((RC == 2)) && [[ -n $ERR ]]'
run dashboard /d /d/lock
check "overlapping prefixes are a usage error (exit 2)" eval '((RC == 2)) && [[ $ERR == *overlap* ]]'
port=$((20000 + RANDOM % 20000))
while listening "$port"; do port=$((20000 + RANDOM % 20000)); done
run dashboard /d --listen "0.0.0.0:$port"
check "a non-loopback --listen without TLS or --insecure: exit 2, nothing listens" \
  eval '((RC == 2)) && [[ $ERR == *--insecure* ]] && ! listening $port'

# --- recipe state, made by the tool -------------------------------------------------------

spawn holder lock /d/lock --ttl 10 -- sleep 600
holder=$PID
wait_until 10 keys_are /d/lock/ 1 || fail "the lock was not taken"
for i in 1 2; do spawn "waiter$i" lock /d/lock --ttl 10 -- sleep 600; done
wait_until 10 keys_are /d/lock/ 3 || fail "the waiters did not queue"
spawn_contended_state /d
run queue push /d/q first second third
run counter add /d/hits 42
run workqueue push /d/jobs poison
run workqueue work /d/jobs -n 1 --max-deliveries 1 --idle-exit 1s -- false
run workqueue work /d/jobs -n 1 --max-deliveries 1 --idle-exit 1s -- false
wait_until 10 keys_are /d/jobs/dead/ 1 || fail "no dead letter"
run workqueue push /d/jobs busy
spawn worker workqueue work /d/jobs -n 1 --visibility 30 -- sh -c 'exec sleep 600'
wait_until 10 keys_are /d/jobs/claims/ 1 || fail "the worker did not claim an item"

# --- the dashboards -------------------------------------------------------------------------

if start_server ro --endpoints "$EP" --timeout 5s -v dashboard /d --listen 127.0.0.1:0; then
  ro=$PID
  RO_PORT=$PORT
  pass "the read-only dashboard serves on the free port it says (127.0.0.1:$RO_PORT)"
else
  fail "the read-only dashboard did not serve" "$(cat "$WORK/ro.err")"
fi
if start_server rw --endpoints "$EP" --timeout 5s dashboard /d --listen 127.0.0.1:0 --allow-actions; then
  rw=$PID
  RW_PORT=$PORT
else
  fail "the dashboard with --allow-actions did not serve" "$(cat "$WORK/rw.err")"
fi

if [[ -n ${RO_PORT:-} && -n ${RW_PORT:-} ]]; then
  timeout -k 10 300 "$PY" "$HERE/dashboard_browser.py" "$BIN" "$EP" "http://127.0.0.1:$RO_PORT/" \
    "http://127.0.0.1:$RW_PORT/" "$ARTIFACTS" >"$WORK/browser.out" 2>&1
  browser_rc=$?
  report_lines "$WORK/browser.out"
  check "the browser test ran to its end" eval '((browser_rc == 0)) || grep -q "^FAIL:" "$WORK/browser.out"'
  check "the released holder's command was stopped as a loss (exit 75)" \
    eval 'wait_until 20 dead $holder && { wait $holder; [[ $? == 75 ]]; }'
  check "each action is said on stderr with what it did" \
    eval 'file_has "$WORK/rw.err" "action requeue /d/jobs dead letter" && file_has "$WORK/rw.err" "action release /d/lock key"'

  # --- without a browser ----------------------------------------------------------------------
  URL="http://127.0.0.1:$RO_PORT"
  # The stream's first messages, up to the state of the prefix.
  timeout 10 "$PY" -c "
import sys, urllib.request
r = urllib.request.urlopen('$URL/events', timeout=5)
for line in r:
    sys.stdout.write(line.decode(errors='replace'))
    if line.startswith(b'event: state'):
        sys.stdout.write(r.readline().decode(errors='replace'))
        break
" >"$WORK/events" 2>/dev/null
  check "/events: hello, history and the state, as Server-Sent Events" \
    eval 'grep -q "^event: hello" "$WORK/events" && grep -q "^event: history" "$WORK/events" && grep -q "^event: state" "$WORK/events"'
  check "/events never sends the etcd endpoints or credentials to the browser" eval '! grep -qF "$EP" "$WORK/events"'
  read -r status _ < <(post "$URL/api/action" '{"action":"purge","name_b64":"L2Qvam9icw==","id":"x"}' "X-Etcd-Recipes-Action: 1")
  check "an action on the read-only dashboard: 403" eval '[[ $status == 403 ]]'
  URL_RW="http://127.0.0.1:$RW_PORT"
  read -r status _ < <(post "$URL_RW/api/action" '{"action":"purge","name_b64":"L2Qvam9icw==","id":"x"}')
  check "an action without the page's header (a form elsewhere): 400" eval '[[ $status == 400 ]]'
  read -r status _ < <(post "$URL_RW/api/action" '{"action":"purge","name_b64":"L290aGVy","id":"x"}' "X-Etcd-Recipes-Action: 1")
  check "an action on a recipe outside the prefixes shown: 403" eval '[[ $status == 403 ]]'
  read -r status _ < <(post "$URL_RW/api/action" '{"action":"purge","name_b64":"L2Qvam9icw==","id":"nope"}' "X-Etcd-Recipes-Action: 1")
  check "purging a dead letter that is not there: 409, nothing written" eval '[[ $status == 409 ]]'
  key=$("$BIN" --endpoints "$EP" kv get --prefix /d/lock/ --keys-only | head -1)
  rev=$("$BIN" --endpoints "$EP" -w json kv get "$key" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["create_revision"])')
  k64=$(printf '%s' "$key" | base64 -w0)
  read -r status _ < <(post "$URL_RW/api/action" "{\"action\":\"release\",\"name_b64\":\"L2QvbG9jaw==\",\"key_b64\":\"$k64\",\"create_revision\":$((rev + 1000))}" "X-Etcd-Recipes-Action: 1")
  check "releasing with a token that is not the holder's: 409, the key stays" \
    eval '[[ $status == 409 ]] && [[ -n $("$BIN" --endpoints "$EP" kv get "$key") ]]'

  printf '%s\n' "$URL/metrics" "$WORK/samples" | paste -sd' ' | "$PY" -u "$HERE/scrape_metrics.py" >"$WORK/scrape"
  check "/metrics: the exporter's metrics from the same state, parsed by prometheus_client" \
    eval '[[ $(cat "$WORK/scrape") == 0* ]] && grep -q "etcd_recipes_workqueue_in_flight{" "$WORK/samples"'

  # SIGTERM with a page still open: the stream ends and the process exits 0.
  "$PY" -c "import urllib.request,time; r=urllib.request.urlopen('$URL/events'); r.read(100); time.sleep(60)" &
  page=$!
  BG_PIDS+=("$page")
  sleep 0.5
  start=$SECONDS
  stop_server "$ro"
  check "SIGTERM with a page open: exit 0 within 5 s, nothing listens" \
    eval '((RC == 0)) && ((SECONDS - start <= 5)) && ! listening $RO_PORT'
  stop_server "$rw"
fi

if start_server insecure --endpoints "$EP" dashboard /d --listen 0.0.0.0:0 --insecure; then
  check "--insecure: a non-loopback address serves the page" \
    eval '"$PY" -c "import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:$PORT/\").read()"'
  stop_server "$PID"
else
  fail "--insecure: the dashboard did not serve" "$(cat "$WORK/insecure.err")"
fi

# --- etcd refuses: shown, not hidden (last: it turns authentication on) -------------------------

if [[ -n $ETCDCTL ]]; then
  ctl() { ETCDCTL_API=3 timeout 30 "$ETCDCTL" --endpoints "$EP" "$@" >>"$WORK/etcdctl.log" 2>&1; }
  if ctl user add root:s3cret && ctl user grant-role root root && ctl user add viewer:v1ew && ctl auth enable; then
    if start_server denied --endpoints "$EP" --user viewer:v1ew dashboard /d --listen 127.0.0.1:0; then
      timeout 10 "$PY" -c "
import sys, urllib.request
r = urllib.request.urlopen('http://127.0.0.1:$PORT/events', timeout=5)
for line in r:
    if line.startswith(b'data: ') and b'\"prefix\"' in line and b'\"recipes\"' in line:
        sys.stdout.write(line.decode(errors='replace'))
        break
" >"$WORK/denied-state" 2>/dev/null
      check "a user etcd refuses: the page's state carries etcd's refusal for the prefix" \
        eval 'grep -qi "permission denied" "$WORK/denied-state"'
      check "... and the dashboard says it on stderr and keeps serving" \
        eval 'file_has "$WORK/denied.err" "ermission denied" && alive $PID'
      stop_server "$PID"
    else
      fail "the dashboard with a refused user did not serve" "$(cat "$WORK/denied.err")"
    fi
  else
    fail "enable authentication with etcdctl" "$(cat "$WORK/etcdctl.log")"
  fi
else
  echo "SKIP: a refusing etcd (no etcdctl)"
fi

echo "screenshots: $ARTIFACTS"
echo "$passed passed, $failed failed"
((failed == 0))
