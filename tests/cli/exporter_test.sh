#!/usr/bin/env bash
# End-to-end test of `etcd-recipes exporter PREFIX...`, scraped as
# Prometheus scrapes it: recipe state made with the tool itself (queues, a
# work queue with an item in flight and a dead letter, a lock with waiters,
# a semaphore, an election, a counter, a barrier, a service), 100 random
# steps of queue pushes and pops with a scrape after each, every scrape
# parsed by prometheus_client's parser; then the serving rules: a
# non-loopback address needs TLS or --insecure, TLS, a bearer token, basic
# authentication, an unreachable etcd, shutdown on SIGTERM.
#
#   bash tests/cli/exporter_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd on free loopback ports and removes everything on
# exit. One PASS/FAIL line per check, "N passed, M failed" at the end; exits
# 1 if anything failed, 77 if etcd cannot be started. EXPORTER_TEST_SEED
# repeats a run's random steps.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=exporter-test
POLL_INTERVAL=0.05
HERE=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tests/cli/lib.sh
source "$HERE/lib.sh"

# Prometheus's own parser, from Debian's python3-prometheus-client (dev.sh
# installs it).
if ! python_with prometheus_client.parser; then
  echo "FAIL: no python3 with prometheus_client (apt-get install python3-prometheus-client)"
  echo "0 passed, 1 failed"
  exit 1
fi

start_etcd_or_skip
SEED=${EXPORTER_TEST_SEED:-$$}
RANDOM=$SEED
echo "random steps with EXPORTER_TEST_SEED=$SEED"

# --- helpers ---------------------------------------------------------------------------

# One scraper process for the whole test (tests/cli/scrape_metrics.py).
coproc SCRAPER { exec "$PY" -u "$HERE/scrape_metrics.py"; }
BG_PIDS+=("$SCRAPER_PID")

# scrape URL [cacert=F] [auth=VALUE]: sets SCRAPE (the scraper's answer)
# and SCRAPE_RC (0: 200, and the text parsed); the samples (or the body)
# are in $WORK/samples.
scrape() {
  printf '%q ' "$1" "$WORK/samples" "${@:2}" >&"${SCRAPER[1]}"
  echo >&"${SCRAPER[1]}"
  read -t 60 -r SCRAPE <&"${SCRAPER[0]}" || SCRAPE="9 the scraper did not answer within 60 s"
  SCRAPE_RC=${SCRAPE%% *}
}
# metric NAME 'K="V",...' (labels sorted by name): the sample's value from
# the last scrape, "absent" if it has none.
metric() {
  local line
  line=$(grep -F -m1 -- "$1{$2} " "$WORK/samples") && echo "${line##* }" || echo absent
}
# A queue without keys is no recipe: absent from the metrics, size 0.
depth_of() {
  local d
  d=$(metric etcd_recipes_queue_depth "kind=\"$2\",queue=\"$1\"")
  [[ $d == absent ]] && d=0
  echo "$d"
}
scrape_details() { echo "scrape: $SCRAPE" "samples or body: $(head -c 2000 "$WORK/samples" 2>/dev/null)"; }


# --- usage -----------------------------------------------------------------------------

run exporter
check "exporter without PREFIX is a usage error (exit 2)" eval '((RC == 2)) && [[ -n $ERR ]]'
run exporter /app /app/q1
check "overlapping prefixes are a usage error (exit 2)" eval '((RC == 2)) && [[ $ERR == *overlap* ]]'
run exporter /app --listen nowhere
check "a --listen that is not HOST:PORT is a usage error (exit 2)" eval '((RC == 2)) && [[ $ERR == *--listen* ]]'

port=$((20000 + RANDOM % 20000))
while listening "$port"; do port=$((20000 + RANDOM % 20000)); done
start=$SECONDS
run exporter /app --listen "0.0.0.0:$port"
check "a non-loopback --listen without TLS or --insecure: exit 2 at once, naming both ways out" \
  eval '((RC == 2)) && ((SECONDS - start < 10)) && [[ $ERR == *--insecure* && $ERR == *--tls-cert* ]]'
check "... and nothing listened on its port" eval '! listening $port'

run exporter /app --listen "127.0.0.1:${EP##*:}"
check "an address in use (etcd's own port): exit 1, saying so" eval '((RC == 1)) && [[ $ERR == *"cannot listen on"* ]]'

# --- recipe state, made by the tool -------------------------------------------------------

spawn holder lock /app/lock --ttl 10 -- sleep 600
holder=$PID
wait_until 10 keys_are /app/lock/ 1 || fail "the lock was not taken"
spawn_contended_state /app
run workqueue push /app/wq w0
spawn worker workqueue work /app/wq -n 1 --visibility 30 -- sh -c 'exec sleep 600'
wait_until 10 keys_are /app/wq/claims/ 1 || fail "the worker did not claim an item"
run workqueue push /app/dlq poison
run workqueue work /app/dlq -n 1 --max-deliveries 1 --idle-exit 1s -- false
run workqueue work /app/dlq -n 1 --max-deliveries 1 --idle-exit 1s -- false
wait_until 10 keys_are /app/dlq/dead/ 1 || fail "no dead letter"
run workqueue push /app/delayed --delay 15s later
delayed_at=$SECONDS

if start_server exporter --endpoints "$EP" --timeout 5s -v exporter /app /other --listen 127.0.0.1:0; then
  pass "the exporter serves on the free port it says (127.0.0.1:$PORT)"
else
  fail "the exporter did not serve" "$(cat "$WORK/exporter.err")"
fi
exporter=$PID
URL="http://127.0.0.1:$PORT"

scrape "$URL/metrics"
check "a scrape parses with prometheus_client: HELP and TYPE once per family, its samples together" \
  eval '((SCRAPE_RC == 0))'
check "each prefix is up and read at a revision" \
  eval '[[ $(metric etcd_recipes_exporter_up "prefix=\"/app\"") == 1 && $(metric etcd_recipes_exporter_up "prefix=\"/other\"") == 1 ]] &&
        (($(metric etcd_recipes_exporter_revision "prefix=\"/app\"") > 0))'
check "a held lock: 1 holder, 0 waiters, its token" \
  eval '[[ $(metric etcd_recipes_lock_holders "kind=\"lock_or_election\",lock=\"/app/lock\"") == 1 &&
           $(metric etcd_recipes_lock_waiters "kind=\"lock_or_election\",lock=\"/app/lock\"") == 0 ]] &&
        (($(metric etcd_recipes_lock_token "kind=\"lock_or_election\",lock=\"/app/lock\"") > 0))'
check "a semaphore of 2 with 3 contenders: 2 holders, 1 waiter, 2 permits" \
  eval '[[ $(metric etcd_recipes_lock_holders "kind=\"semaphore\",lock=\"/app/sem\"") == 2 &&
           $(metric etcd_recipes_lock_waiters "kind=\"semaphore\",lock=\"/app/sem\"") == 1 &&
           $(metric etcd_recipes_semaphore_permits "semaphore=\"/app/sem\"") == 2 ]]'
check "an election: its leader's value as a label" \
  eval '[[ $(metric etcd_recipes_election_leader_info "election=\"/app/leader\",leader=\"node-a\"") == 1 ]]'
check "a count barrier: 2 parties waiting" \
  eval '[[ $(grep -F "etcd_recipes_barrier_parties{barrier=\"/app/start\"," "$WORK/samples") == *"} 2" ]]'
check "a service: 1 instance" eval '[[ $(metric etcd_recipes_service_instances "service=\"/app/services/api\"") == 1 ]]'
check "a work queue: the claimed item in flight, not waiting" \
  eval '[[ $(metric etcd_recipes_workqueue_in_flight "queue=\"/app/wq\"") == 1 &&
           $(depth_of /app/wq work_queue) == 0 && $(metric etcd_recipes_workqueue_dead_letters "queue=\"/app/wq\"") == 0 ]]'
check "a dead letter" eval '[[ $(metric etcd_recipes_workqueue_dead_letters "queue=\"/app/dlq\"") == 1 ]]'
check "a delayed item that is not due yet: waiting, and no age" \
  eval '((SECONDS - delayed_at >= 14)) || { [[ $(depth_of /app/delayed work_queue) == 1 ]] &&
        [[ $(metric etcd_recipes_queue_oldest_age_seconds "kind=\"work_queue\",queue=\"/app/delayed\"") == absent ]]; }'

# --- 100 random steps, a scrape after each --------------------------------------------------

queues=(/app/q1 /app/q2 /other/q3)
declare -A size=([/app/q1]=0 [/app/q2]=0 [/other/q3]=0)
waiters=0
hits=0
mismatches=()
declare -A did=([push]=0 [pop]=0 [empty]=0 [work]=0 [add]=0)
for step in $(seq 1 100); do
  q=${queues[RANDOM % ${#queues[@]}]}
  action=$((RANDOM % 10))
  case $action in
    0 | 1 | 2 | 3)
      # shellcheck disable=SC2046  # one value per word
      run queue push "$q" $(seq -f "s$step-%g" 1 $((1 + RANDOM % 3)))
      ((did[push] += 1))
      ;;
    4 | 5 | 6)
      run queue pop "$q" --no-wait
      ((RC == 0 ? (did[pop] += 1) : (did[empty] += 1)))
      ;;
    7)
      run workqueue push /app/wq "w$step"
      ((did[work] += 1))
      ;;
    8)
      n=$((1 + RANDOM % 9))
      run counter add /app/hits "$n"
      ((RC == 0)) && hits=$((hits + n))
      ((did[add] += 1))
      ;;
    9)
      if ((waiters < 4)); then
        spawn "waiter$waiters" lock /app/lock --ttl 10 -- true
        waiters=$((waiters + 1))
        wait_until 10 keys_are /app/lock/ $((waiters + 1)) || mismatches+=("step $step: waiter $waiters did not queue")
      fi
      ;;
  esac
  run queue size "$q"
  size[$q]=$OUT
  scrape "$URL/metrics"
  if ((SCRAPE_RC != 0)); then
    mismatches+=("step $step: $SCRAPE")
    continue
  fi
  for name in "${queues[@]}"; do
    depth=$(depth_of "$name" queue)
    [[ $depth == "${size[$name]}" ]] || mismatches+=("step $step: $name depth $depth, queue size ${size[$name]}")
  done
  got=$(metric etcd_recipes_lock_waiters 'kind="lock_or_election",lock="/app/lock"')
  [[ $got == "$waiters" ]] || mismatches+=("step $step: lock waiters $got, spawned $waiters")
  if ((action == 7)); then
    run workqueue size /app/wq
    got=$(($(depth_of /app/wq work_queue) + $(metric etcd_recipes_workqueue_in_flight 'queue="/app/wq"')))
    [[ $got == "$OUT" ]] || mismatches+=("step $step: work queue depth + in flight $got, workqueue size $OUT")
  fi
  if ((hits > 0)); then
    got=$(metric etcd_recipes_counter_value 'counter="/app/hits"')
    [[ $got == "$hits" ]] || mismatches+=("step $step: counter $got, added $hits")
  fi
done
echo "the steps: ${did[push]} pushes, ${did[pop]} pops that took an item, ${did[empty]} of an empty queue," \
  "${did[work]} work queue pushes, ${did[add]} counter adds, $waiters lock waiters"
check "100 random steps: after each, every queue's depth is its queue size, lock waiters and counter match" \
  eval '((${#mismatches[@]} == 0))'
((${#mismatches[@]} == 0)) || printf '      %s\n' "${mismatches[@]:0:10}"

wait_until 20 eval '((SECONDS - delayed_at >= 16))'
scrape "$URL/metrics"
age=$(metric etcd_recipes_queue_oldest_age_seconds 'kind="work_queue",queue="/app/delayed"')
check "a delayed work item once due: its age since it became ready" \
  eval '[[ $age != absent ]] && awk -v a="$age" "BEGIN { exit !(a > 0 && a < 60) }"'
check "a plain queue's items carry no time: no age" \
  eval '[[ $(metric etcd_recipes_queue_oldest_age_seconds "kind=\"queue\",queue=\"/app/q1\"") == absent ]]'

# --- cost: a big queue is counted, not read -------------------------------------------------------

# In pushes of 100 (one push is one transaction, within etcd's 128 operations).
for first in $(seq 1 100 1901); do
  # shellcheck disable=SC2046
  run queue push /other/big $(seq -f 'i%04g' "$first" $((first + 99)))
done
scrape "$URL/metrics"
requests=$(metric etcd_recipes_exporter_scrape_requests 'prefix="/other"')
check "a 2000-item queue: its exact depth in a scrape of at most 40 etcd requests ($requests)" \
  eval '[[ $(depth_of /other/big queue) == 2000 ]] && ((requests <= 40))'

# --- the other paths, and the log ----------------------------------------------------------------

scrape "$URL/"
check "/ points to /metrics" eval '((SCRAPE_RC == 0)) && grep -q "/metrics" "$WORK/samples"'
scrape "$URL/healthz"
check "/healthz answers ok" eval '((SCRAPE_RC == 0)) && [[ $(cat "$WORK/samples") == ok ]]'
scrape "$URL/nothing"
check "another path: 404" eval '[[ $SCRAPE == "3 HTTP 404" ]]'
check "-v: one log line per request" eval 'file_has "$WORK/exporter.err" "GET /metrics 200 from 127.0.0.1:"'

stop_server "$exporter"
check "SIGTERM: the exporter exits 0 and stops listening" eval '((RC == 0)) && ! listening $PORT'

# --- serving rules --------------------------------------------------------------------------------

if start_server insecure --endpoints "$EP" exporter /app --listen 0.0.0.0:0 --insecure; then
  scrape "http://127.0.0.1:$PORT/metrics"
  check "--insecure: a non-loopback address serves plain HTTP" eval '((SCRAPE_RC == 0))'
else
  fail "--insecure: the exporter did not serve" "$(cat "$WORK/insecure.err")"
fi
stop_server "$PID"

if openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 2 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1; then
  if start_server tls --endpoints "$EP" exporter /app --listen 0.0.0.0:0 --tls-cert "$WORK/cert.pem" \
    --tls-key "$WORK/key.pem"; then
    scrape "https://127.0.0.1:$PORT/metrics" "cacert=$WORK/cert.pem"
    check "TLS: a non-loopback address serves HTTPS with the certificate given" \
      eval '((SCRAPE_RC == 0)) && [[ $(metric etcd_recipes_exporter_up "prefix=\"/app\"") == 1 ]]'
    scrape "http://127.0.0.1:$PORT/metrics"
    check "TLS: plain HTTP gets no answer" eval '((SCRAPE_RC == 5))'
  else
    fail "TLS: the exporter did not serve" "$(cat "$WORK/tls.err")"
  fi
  stop_server "$PID"
else
  fail "openssl req could not make a certificate"
fi
echo "not a certificate" >"$WORK/bad.pem"
run exporter /app --listen 127.0.0.1:0 --tls-cert "$WORK/bad.pem" --tls-key "$WORK/bad.pem"
check "an unusable certificate: exit 2, nothing served" eval '((RC == 2)) && [[ $ERR == *--tls-cert* ]]'

printf 's3cret-token\n' >"$WORK/token"
if start_server bearer --endpoints "$EP" exporter /app --bearer-token-file "$WORK/token" --listen 127.0.0.1:0; then
  scrape "http://127.0.0.1:$PORT/metrics"
  check "bearer token: 401 without it" eval '[[ $SCRAPE == "3 HTTP 401" ]]'
  scrape "http://127.0.0.1:$PORT/metrics" "auth=Bearer wrong-token"
  check "bearer token: 401 with a wrong one" eval '[[ $SCRAPE == "3 HTTP 401" ]]'
  scrape "http://127.0.0.1:$PORT/healthz"
  check "bearer token: every path wants it" eval '[[ $SCRAPE == "3 HTTP 401" ]]'
  scrape "http://127.0.0.1:$PORT/metrics" "auth=Bearer s3cret-token"
  check "bearer token: 200 with it" eval '((SCRAPE_RC == 0))'
else
  fail "bearer token: the exporter did not serve" "$(cat "$WORK/bearer.err")"
fi
stop_server "$PID"

printf 'prom:pa ss\n' >"$WORK/basic"
if start_server basic --endpoints "$EP" exporter /app --basic-auth-file "$WORK/basic" --listen 127.0.0.1:0; then
  scrape "http://127.0.0.1:$PORT/metrics" "auth=Basic $(printf 'prom:wrong' | base64)"
  check "basic auth: 401 with a wrong password" eval '[[ $SCRAPE == "3 HTTP 401" ]]'
  scrape "http://127.0.0.1:$PORT/metrics" "auth=Basic $(printf 'prom:pa ss' | base64)"
  check "basic auth: 200 with USER:PASSWORD" eval '((SCRAPE_RC == 0))'
else
  fail "basic auth: the exporter did not serve" "$(cat "$WORK/basic.err")"
fi
stop_server "$PID"
run exporter /app --bearer-token-file "$WORK/token" --basic-auth-file "$WORK/basic"
check "a bearer token and basic auth together: exit 2" eval '((RC == 2))'

# --- an unreachable etcd ---------------------------------------------------------------------------

if start_server down --endpoints 127.0.0.1:1 --timeout 2s exporter /app --listen 127.0.0.1:0; then
  start=$SECONDS
  scrape "http://127.0.0.1:$PORT/metrics" "raw=$WORK/raw"
  check "an unreachable etcd: the scrape answers, up 0, the cause in a comment line and on stderr" \
    eval '((SCRAPE_RC == 0)) && ((SECONDS - start < 20)) && [[ $(metric etcd_recipes_exporter_up "prefix=\"/app\"") == 0 ]] &&
          [[ $(metric etcd_recipes_exporter_revision "prefix=\"/app\"") == absent ]] &&
          file_has "$WORK/raw" "^# prefix=\"/app\" not read: exporter /app" && file_has "$WORK/down.err" "exporter /app"'
else
  fail "unreachable etcd: the exporter did not serve" "$(cat "$WORK/down.err")"
fi
stop_server "$PID"

for p in "${BG_PIDS[@]}"; do
  [[ $p == "$SCRAPER_PID" || $p == "$ETCD_PID" ]] || kill -TERM "$p" 2>/dev/null
done

echo "$passed passed, $failed failed"
((failed == 0))
