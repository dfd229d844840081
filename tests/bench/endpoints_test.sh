#!/usr/bin/env bash
# etcd-recipes-bench against an existing etcd (--endpoints), as an operator
# runs it on a shared cluster: two runs in a row on one member both pass
# (each under a fresh key prefix, so the second never meets the first's
# keys), and neither leaves a key behind.
# usage: endpoints_test.sh PATH/TO/etcd-recipes PATH/TO/etcd-recipes-bench
TEST_NAME=bench-endpoints
BENCH=${2:?usage: $(basename "$0") PATH/TO/etcd-recipes PATH/TO/etcd-recipes-bench}
BENCH=$(realpath "$BENCH")
# shellcheck source=../cli/lib.sh
source "$(dirname "$0")/../cli/lib.sh"
start_etcd_or_skip

# A recipe wait, a lock and a work queue: the metrics that leave keys on
# leases, claims and gates if they do not clean up.
metrics=barrier_release_p50_ms,lock_cycle_seq,workqueue_cycle_seq,counter_add_seq
for round in 1 2; do
  timeout -k 5 300 "$BENCH" --endpoints "$EP" --quick --metric-limit 60 --only "$metrics" \
    --json "$WORK/run$round.json" >"$WORK/out" 2>"$WORK/err"
  RC=$?
  OUT=$(cat "$WORK/out")
  ERR=$(cat "$WORK/err")
  check "run $round against --endpoints passes" test "$RC" -eq 0
  check "run $round: no metric failed" eval '! grep -q FAILED "$WORK/out"'
  check "run $round leaves no key under bench/" keys_are bench/ 0
done

echo "$passed passed, $failed failed"
((failed == 0))
