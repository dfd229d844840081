#!/usr/bin/env bash
# End-to-end test of the CLI's input and output for scripts:
#   - values from standard input (`-`) or --file: any bytes, any size up to
#     the server's request limit, which is named when exceeded;
#   - -w json on every command, keys and values base64, lease ids hex;
#   - usage errors exit 2 with a message a person can read;
#   - watch/observe with nothing listening name the cause;
#   - etcdctl's `KEY --prefix` form.
#
#   bash tests/cli/io_test.sh PATH/TO/etcd-recipes [PATH/TO/etcd-recipes-bench]
#
# With the bench's path, also checks that it runs against this (existing)
# etcd with --endpoints.
#
# Starts a private etcd like the other CLI tests (and a TLS one, with
# certificates made by openssl, for the certificate checks; skipped without
# openssl).

# shellcheck disable=SC2016,SC2034

set -u

BENCH=${2:-}
TEST_NAME=io-test
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

now_ms() { date +%s%3N; }
b64() { base64 -w0; }

start_etcd_or_skip

# --- 8. values from standard input or a file ------------------------------------------------

# 200 KiB of every byte value (NUL included): more than one argument can carry.
head -c 204800 /dev/urandom >"$WORK/big"
printf 'a\0b\0\n' >>"$WORK/big"
run kv put io/big - <"$WORK/big"
check "kv put KEY - reads a 200 KiB binary value with NUL bytes from stdin" eval '((RC == 0)) && [[ $OUT =~ ^[0-9]+$ ]]'
"$BIN" --endpoints "$EP" kv get io/big >"$WORK/big.got" 2>/dev/null
# kv get prints the value and a newline.
check "kv get returns the same bytes" eval 'cmp -s <(cat "$WORK/big"; echo) "$WORK/big.got"'

printf 'from\0file' >"$WORK/small"
run kv put io/file --file "$WORK/small"
"$BIN" --endpoints "$EP" kv get io/file -w json >"$WORK/file.json"
check "kv put KEY --file F stores the file's bytes" \
  eval '((RC == 0)) && grep -q "\"value\":\"$(b64 <"$WORK/small")\"" "$WORK/file.json"'

run kv put io/both v --file "$WORK/small"
check "kv put with a value and --file is a usage error" eval '((RC == 2)) && [[ $ERR == *"not both"* ]]'
run kv put io/none --file "$WORK/no-such-file"
check "kv put --file of a missing file is a usage error naming it" eval '((RC == 2)) && [[ $ERR == *no-such-file* ]]'

head -c 2000000 /dev/zero >"$WORK/huge"
run kv put io/huge --file "$WORK/huge"
check "a value over the server's request limit: exit 1 naming the limit" \
  eval '((RC == 1)) && [[ $ERR == *"2000000 bytes"*"--max-request-bytes"*"1.5 MiB"* ]]'

printf 'leader\0value' >"$WORK/proposal"
spawn elector elect io/el --file "$WORK/proposal" -- sleep 30
elector=$PID
wait_until 15 keys_are io/el/ 1
"$BIN" --endpoints "$EP" observe io/el --once >"$WORK/obs.out" 2>"$WORK/obs.err"
check "elect --file F campaigns with the file's bytes as its value" eval 'cmp -s <(cat "$WORK/proposal"; echo) "$WORK/obs.out"'
kill -TERM "$elector"
finish "$elector" elector

# --- 9, 10. one output switch; base64 keys and values; hex lease ids -------------------------

printf 'k\xff\xfe' >"$WORK/rawkey"
printf 'v\xc3\x28\x00z' >"$WORK/rawval"
rawkey=$(cat "$WORK/rawkey") # bash cannot hold NUL; the key has none
run kv put "$rawkey" --file "$WORK/rawval"
run kv get "$rawkey" -w json
check "-w json: key and value base64 (bytes that are not UTF-8, a NUL), exactly as written" \
  eval '((RC == 0)) && [[ $OUT == *"\"key\":\"$(b64 <"$WORK/rawkey")\""* && $OUT == *"\"value\":\"$(b64 <"$WORK/rawval")\""* ]]'
run kv get "$rawkey" --json
check "the old --json flag is an alias of -w json" eval '((RC == 0)) && [[ $OUT == *"\"value\":\"$(b64 <"$WORK/rawval")\""* ]]'
run kv get "$rawkey" --help
check "--json is hidden from help, -w is documented" eval '[[ $OUT != *"--json"* ]] && run --help && [[ $OUT == *"--write-out"* ]]'

run lease grant 60 -w json
lease=$(grep -o '"id":"[0-9a-f]*"' "$WORK/out" | cut -d'"' -f4)
check "lease grant -w json prints the id in hex" eval '((RC == 0)) && [[ $lease =~ ^[0-9a-f]{16}$ ]]'
run kv put io/leased v --lease "$lease"
run kv get io/leased -w json
check "kv get -w json shows the lease as the same hex id" eval '((RC == 0)) && [[ $OUT == *"\"lease\":\"$lease\""* ]]'
run lease ttl "$lease" --keys -w json
check "lease ttl -w json: hex id, keys base64" \
  eval '((RC == 0)) && [[ $OUT == *"\"id\":\"$lease\""* && $OUT == *"\"keys\":[\"$(printf io/leased | b64)\"]"* ]]'
run lease list -w json
check "lease list -w json" eval '((RC == 0)) && [[ $OUT == *"\"$lease\""* ]]'
run kv put io/json v -w json
check "kv put -w json" eval '((RC == 0)) && [[ $OUT =~ ^\{\"revision\":[0-9]+\}$ ]]'
run kv del io/json -w json
check "kv del -w json" eval '((RC == 0)) && [[ $OUT == *"\"deleted\":1"* ]]'
run status -w json
check "status -w json" eval '((RC == 0)) && [[ $OUT == "[{"*"\"endpoint\":\"$EP\""* ]]'
run -w yaml kv get io/leased
check "-w with an unknown format is a usage error" eval '((RC == 2))'
run lease ttl 12
check "lease ids are hex: 12 is 0x12 (not found, exit 1), never guessed as decimal" \
  eval '((RC == 1)) && [[ $ERR == *"lease 0000000000000012 not found"* ]]'
run lease ttl 12g
check "a lease id that is not hex is a usage error" eval '((RC == 2)) && [[ $ERR == *"lease ids are hex"* ]]'
run lease revoke "$lease"

# --- 11. usage errors a person understands ------------------------------------------------------

# usage NAME EXPECTED-IN-ERR ARGS...: exit 2, a short message containing EXPECTED.
# With RAW=1 the tool gets ARGS alone (no --endpoints of ours).
usage() {
  local name=$1 expected=$2
  shift 2
  if ((${RAW:-0})); then
    timeout -k 5 60 "$BIN" "$@" >"$WORK/out" 2>"$WORK/err"
    RC=$?
    OUT=$(cat "$WORK/out")
    ERR=$(cat "$WORK/err")
  else
    run "$@"
  fi
  check "usage error, readable: $name" \
    eval '((RC == 2)) && [[ $ERR == *"$expected"* ]] && ((${#ERR} < 400)) && [[ $ERR != *"0000000000"* ]]'
}
usage "lock --ttl 0" "from 1 to 2147483647" lock x --ttl 0 -- true
usage "lock --ttl 9000000000" "from 1 to 2147483647" lock x --ttl 9000000000 -- true
usage "semaphore with 0 permits" "from 1 to" semaphore s 0 -- true
usage "kv compact 0" "at least 1" kv compact 0
usage "kv get --limit -1" "at least 0" kv get x --limit -1
usage "an empty lock name" "must not be empty" lock "" -- true
usage "a lock name ending in /" "must not end with '/'" lock "a/" -- true
usage "an empty election name for observe" "must not be empty" observe ""
usage "CMD without -- before it" "put -- before the command" lock x sh -c true
# Without --, CMD is refused whatever its words: nothing runs.
for cmd_args in "lock x" "semaphore s 1" "rwlock x read" "elect e --value v" "transient cli/t v" \
  "workqueue work q" "discovery register api --address h --port 1"; do
  # shellcheck disable=SC2086  # word splitting intended
  usage "$cmd_args echo hi (no -- before CMD)" "put -- before the command" $cmd_args echo ran-anyway
  check "  ... and CMD did not run" eval '[[ $OUT != *ran-anyway* ]]'
done
usage "a mistyped command names the nearest" "no such command: lcok; did you mean: etcd-recipes lock?" lcok x
usage "a mistyped subcommand names the nearest" "no such command: gett; did you mean: etcd-recipes kv get?" kv gett x
usage "a mistyped command after global options" "did you mean: etcd-recipes workqueue?" -w json workqeue size q
usage "an unknown command far from any" "etcd-recipes: no such command: frobnicate" frobnicate
check "  ... with no guess" eval '[[ $ERR != *"did you mean"* ]]'
usage "kv get of an empty key" "the key must not be empty" kv get ""
usage "kv put of an empty key" "the key must not be empty" kv put "" v
usage "discovery register --port 0" "from 1 to 65535" discovery register api --address h --port 0
usage "discovery register --ssl-port 0" "from 1 to 65535" discovery register api --address h --ssl-port 0
usage "an address with a newline" "control characters" discovery register api --address $'h\nevil 1' --port 1
RAW=1 usage "an endpoint port over 65535" "from 1 to 65535" --endpoints 127.0.0.1:70000 kv get x
RAW=1 usage "an endpoint without a port" "HOST:PORT" --endpoints localhost kv get x
echo "not a certificate" >"$WORK/not.pem"
usage "a --cacert that is not PEM" "not a PEM file" --cacert "$WORK/not.pem" kv get x
check "  ... and no gRPC log lines" eval '[[ $ERR != *"E1"* && $ERR != *".cc:"* && $ERR != *"empty address list"* ]]'
usage "--kill-after that is not a duration" "--kill-after" lock x --kill-after soon -- true

if command -v openssl >/dev/null; then
  certs="$WORK/certs"
  mkdir -p "$certs"
  (
    cd "$certs" || exit 1
    for ca in ca other; do
      openssl req -x509 -newkey rsa:2048 -nodes -keyout $ca.key -out $ca.pem -days 2 -subj "/CN=$ca" 2>/dev/null
    done
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' >ext.cnf
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
      -extfile ext.cnf 2>/dev/null
  )
  tport=$((20000 + RANDOM % 20000))
  tpeer=$((40000 + RANDOM % 20000))
  "$ETCD" --name tls --data-dir "$WORK/etcd-tls" --cert-file "$certs/server.pem" --key-file "$certs/server.key" \
    --listen-client-urls "https://127.0.0.1:$tport" --advertise-client-urls "https://127.0.0.1:$tport" \
    --listen-peer-urls "http://127.0.0.1:$tpeer" --initial-advertise-peer-urls "http://127.0.0.1:$tpeer" \
    --initial-cluster "tls=http://127.0.0.1:$tpeer" >"$WORK/etcd-tls.log" 2>&1 &
  BG_PIDS+=("$!")
  tls_ok() { timeout 5 "$BIN" --endpoints "https://127.0.0.1:$tport" --cacert "$certs/ca.pem" kv put io/tls y >/dev/null 2>&1; }
  if wait_until 20 tls_ok; then
    pass "TLS etcd with --cacert of its CA works"
    RC=0
    timeout 30 "$BIN" --endpoints "https://127.0.0.1:$tport" --cacert "$certs/other.pem" --timeout 2s kv get io/tls \
      >"$WORK/out" 2>"$WORK/err" || RC=$?
    OUT=$(cat "$WORK/out")
    ERR=$(cat "$WORK/err")
    check "a server certificate signed by another CA: exit 1, 'certificate not trusted', no gRPC log lines" \
      eval '((RC == 1)) && [[ $ERR == *"certificate not trusted"* && $ERR != *"E1"*".cc:"* && $(wc -l <"$WORK/err") -le 2 ]]'
    # PEM armour around what is not a certificate, and a key of another certificate.
    printf -- '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n' >"$certs/garbage.pem"
    for tls_args in "--cacert $certs/garbage.pem" "--cacert $certs/ca.pem --cert $certs/server.pem --key $certs/other.key"; do
      RC=0
      # shellcheck disable=SC2086  # word splitting intended
      timeout 30 "$BIN" --endpoints "https://127.0.0.1:$tport" $tls_args --timeout 2s kv get io/tls \
        >"$WORK/out" 2>"$WORK/err" || RC=$?
      ERR=$(cat "$WORK/err")
      check "unusable TLS files (${tls_args//$certs\//}): exit 1, the files named, no gRPC text" \
        eval '((RC == 1)) && [[ $ERR == *"TLS files cannot be used"* && $ERR == *"$certs/"* && $ERR != *"empty address list"* ]]'
    done
  else
    fail "start a TLS etcd" "$(tail -5 "$WORK/etcd-tls.log")"
  fi
else
  echo "SKIP: certificate checks (no openssl)"
fi

# --- 12. watch and observe with nothing listening name the cause ---------------------------------

# Runs the tool against a port nothing listens on: $1 the per-call
# --timeout, the rest the command. Sets RC, took (ms), OUT and ERR.
run_against_nothing() {
  local per_call=$1 start
  shift
  start=$(now_ms)
  timeout -k 5 30 "$BIN" --endpoints 127.0.0.1:1 --timeout "$per_call" "$@" >"$WORK/out" 2>"$WORK/err"
  RC=$?
  took=$(($(now_ms) - start))
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
}

for args in "kv watch x" "observe x" "kv get x"; do
  # shellcheck disable=SC2086  # word splitting intended
  run_against_nothing 5s $args
  check "$args with nothing listening: exit 1 within 2 s (${took} ms), naming the cause" \
    eval '((RC == 1 && took < 2000)) && [[ $ERR == *refused* ]]'
done

# Writes too: the request was never sent, so nothing waits for the deadline,
# and the message says the endpoint is unreachable (not contention).
for args in "kv put x y" "kv del x" "lease grant 10" "counter add c 1" "counter set c 5" "queue push q v" \
  "workqueue push q v" "barrier set b" "transient t v" "elect e --value v"; do
  # shellcheck disable=SC2086  # word splitting intended
  run_against_nothing 10s $args
  check "$args with nothing listening: exit 1 within 3 s (${took} ms; --timeout 10s), the endpoint unreachable" \
    eval '((RC == 1 && took < 3000)) && [[ $ERR == *"unreachable at 127.0.0.1:1"* && $ERR != *contention* ]]'
done

# --- gRPC's own words never reach users ------------------------------------------------------

start=$(now_ms)
timeout -k 5 30 "$BIN" --endpoints no-such-host.invalid:2379 --timeout 10s kv put x y >"$WORK/out" 2>"$WORK/err"
RC=$?
took=$(($(now_ms) - start))
ERR=$(cat "$WORK/err")
check "a host that does not resolve: exit 1 within 3 s (${took} ms), named, in our words" \
  eval '((RC == 1 && took < 3000)) && [[ $ERR == *"no-such-host.invalid:2379"*"does not resolve"* && $ERR != *ARES* && $ERR != *is_balancer* ]]'
# A server that takes connections and never answers (not etcd, or stopped).
if command -v python3 >/dev/null; then
  python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >"$WORK/silent.port" &
  BG_PIDS+=("$!")
  wait_until 10 eval '[[ -s $WORK/silent.port ]]'
  silent="127.0.0.1:$(cat "$WORK/silent.port")"
  for args in "kv get x" "kv put x y"; do
    # shellcheck disable=SC2086  # word splitting intended
    timeout -k 5 30 "$BIN" --endpoints "$silent" --timeout 2s $args >"$WORK/out" 2>"$WORK/err"
    RC=$?
    ERR=$(cat "$WORK/err")
    check "$args on a silent server: exit 1, the endpoint named, no gRPC text" \
      eval '((RC == 1)) && [[ $ERR == *"$silent"* && $ERR != *SETTINGS* && $ERR != *"ipv4:"* && $ERR != *"Deadline Exceeded"* ]]'
  done
else
  echo "SKIP: silent server (no python3)"
fi

# --- 13. etcdctl's KEY --prefix --------------------------------------------------------------------

run kv put io/p/a 1
run kv put io/p/b 2
run kv get io/p/ --prefix --keys-only
check "kv get KEY --prefix (etcdctl's form)" eval '((RC == 0)) && [[ $OUT == $'"'"'io/p/a\nio/p/b'"'"' ]]'
"$BIN" --endpoints "$EP" kv watch io/p/ --prefix >"$WORK/pw.out" 2>"$WORK/pw.err" &
pw=$!
BG_PIDS+=("$pw")
# The watch is confirmed before it prints anything; keep writing until it shows.
wait_until 15 eval '"$BIN" --endpoints "$EP" kv put io/p/c 3 >/dev/null; file_has "$WORK/pw.out" "PUT io/p/c 3"'
kill -TERM "$pw"
wait "$pw"
check "kv watch KEY --prefix" eval 'file_has "$WORK/pw.out" "PUT io/p/c 3"'
run kv del io/p/ --prefix
check "kv del KEY --prefix" eval '((RC == 0)) && [[ $OUT == 3 ]] && keys_are io/p/ 0'
run kv get io/p/ --prefix other
check "KEY --prefix OTHER (two different prefixes) is a usage error" eval '((RC == 2))'

# --- 13. the benchmark against an existing cluster ---------------------------------------------

if [[ -n $BENCH && -x $BENCH ]]; then
  RC=0
  timeout 120 "$BENCH" --endpoints "$EP" --quick --duration-per-metric 0.3 --only put_seq,failover_via_leader_ms \
    --json "$WORK/bench.json" >"$WORK/out" 2>"$WORK/err" || RC=$?
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
  check "etcd-recipes-bench --endpoints: runs put_seq against the existing etcd, says failover_via_leader_ms was skipped" \
    eval '((RC == 0)) && [[ $OUT == *"existing cluster"* && $OUT =~ put_seq\ +[0-9]+ && $OUT == *"failover_via_leader_ms skipped"* ]] && grep -q "\"endpoints\"" "$WORK/bench.json"'
else
  echo "SKIP: etcd-recipes-bench --endpoints (no bench binary given)"
fi

echo "$passed passed, $failed failed"
((failed == 0))
