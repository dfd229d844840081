#!/usr/bin/env bash
# The dashboard at scale: a queue of DASHBOARD_SCALE_ITEMS items (default
# 50,000; the bar is measured with 500,000) and a lock with a real holder and
# 1,000 waiters under the prefix. The page must load in at most 1 s and the
# dashboard process stay within 64 MB of resident memory; it also says how
# long changes take to reach the page beside the big queue
# (tests/cli/dashboard_scale.py).
#
#   bash tests/cli/dashboard_scale_test.sh PATH/TO/etcd-recipes [ARTIFACTS_DIR]
#
# Exits 1 if a bar fails, 77 if etcd cannot be started or there is no
# Chromium.

set -u

TEST_NAME=dashboard-scale
HERE=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tests/cli/lib.sh
source "$HERE/lib.sh"
ARTIFACTS=${2:-$WORK/artifacts}
export DASHBOARD_SCALE_ITEMS=${DASHBOARD_SCALE_ITEMS:-50000}
WAITERS=${DASHBOARD_SCALE_WAITERS:-1000}

if ! python_with selenium || [[ ! -x ${CHROMIUM:-/usr/bin/chromium} ]] || [[ ! -x ${CHROMEDRIVER:-/usr/bin/chromedriver} ]]; then
  echo "SKIP: no Chromium, ChromeDriver or python3 with selenium (apt-get install chromium chromium-driver python3-selenium)"
  exit 77
fi
start_etcd_or_skip

spawn holder lock /s/lock --ttl 30 -- sleep 600
wait_until 10 keys_are /s/lock/ 1 || fail "the lock was not taken"
"$PY" "$HERE/dashboard_scale.py" load "$EP" "$DASHBOARD_SCALE_ITEMS" "$WAITERS" || fail "could not write the keys"

start=$SECONDS
SERVER_START_SECONDS=120 start_server dash --endpoints "$EP" --timeout 30s dashboard /s --listen 127.0.0.1:0
dash=$PID
if [[ -z ${PORT:-} ]]; then
  fail "the dashboard did not serve" "$(cat "$WORK/dash.err")"
else
  echo "MEASURED: the dashboard read the prefix and served in $((SECONDS - start)) s"
  timeout -k 10 400 "$PY" "$HERE/dashboard_scale.py" measure "http://127.0.0.1:$PORT/" "$dash" "$EP" \
    "$ARTIFACTS" >"$WORK/measure.out" 2>&1
  report_lines "$WORK/measure.out"
  ((passed >= 4)) || fail "the measurement did not run to its end"
fi
echo "$passed passed, $failed failed"
((failed == 0))
