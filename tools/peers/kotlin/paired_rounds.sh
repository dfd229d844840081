#!/usr/bin/env bash
# Paired rounds against the Kotlin library: one private etcd member, and for
# each metric ROUNDS rounds of ours (etcd-recipes-bench --endpoints --only M)
# followed at once by the Kotlin peer's twin (kotlin-peer.jar --only kt_M),
# so that each pair meets the same load of the machine. Prints each round's
# ratio (ours / theirs for rates, theirs / ours for latencies) and their
# median; the medians are what the bars compare. METRIC:FLOOR,... also
# runs our FLOOR metrics in each round (in the same bench run as METRIC) and
# reports each against the same twin: the ratio no recipe of ours can beat.
#   paired_rounds.sh [--rounds N] [--seconds S] METRIC[:FLOOR,...]...
#   e.g. paired_rounds.sh --rounds 5 queue_cycle_seq:queue_rpcs_seq workqueue_cycle_seq counter_add_seq
# Needs: etcd-recipes-bench in BUILD (default build/), the Kotlin peer's jar
# (etcd-recipes-bench --kotlin-peer-jar builds it), java, python3, and etcd
# from $ETCD_RECIPES_ETCD (else etcd on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
BENCH=$BUILD/tools/bench/etcd-recipes-bench
rounds=5
seconds=3
metrics=()
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) metrics+=("$1"); shift ;;
  esac
done
((${#metrics[@]})) || { echo "usage: $0 [--rounds N] [--seconds S] METRIC..." >&2; exit 2; }
[[ -x $BENCH ]] || { echo "no $BENCH (build first, or set BUILD)" >&2; exit 2; }
jar=$("$BENCH" --kotlin-peer-jar) || { echo "the Kotlin peer cannot be built here" >&2; exit 77; }
ETCD=${ETCD_RECIPES_ETCD:-$(command -v etcd)}

work=$(mktemp -d /tmp/etcd-recipes-paired.XXXXXX)
etcd_pid=
cleanup() {
  [[ -n $etcd_pid ]] && kill "$etcd_pid" 2>/dev/null && wait "$etcd_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
"$ETCD" --name paired --data-dir "$work/data" --listen-client-urls "http://127.0.0.1:$port" \
  --advertise-client-urls "http://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$((port + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
  --initial-cluster "paired=http://127.0.0.1:$((port + 1))" \
  --heartbeat-interval 100 --election-timeout 1000 >"$work/etcd.log" 2>&1 &
etcd_pid=$!
ep=127.0.0.1:$port
for _ in $(seq 100); do
  curl -fs "http://$ep/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fs "http://$ep/health" >/dev/null || { tail "$work/etcd.log" >&2; exit 1; }
echo "etcd $("$ETCD" --version | head -1 | awk '{print $3}') at $ep; $rounds rounds of ${seconds} s per metric"

for spec in "${metrics[@]}"; do
  m=${spec%%:*}
  floors=""
  [[ $spec == *:* ]] && floors=${spec#*:}
  for r in $(seq "$rounds"); do
    "$BENCH" --endpoints "$ep" --only "$m${floors:+,$floors}" --duration-per-metric "$seconds" --json "$work/ours-$m-$r.json" \
      >"$work/ours-$m-$r.log" 2>&1 || { tail -20 "$work/ours-$m-$r.log" >&2; exit 1; }
    timeout 300 java -jar "$jar" --endpoints "$ep" --prefix "/bench/paired/$m/$r" --duration-ms "$((seconds * 1000))" \
      --only "kt_$m" >"$work/kt-$m-$r.json" 2>"$work/kt-$m-$r.err" || { tail -20 "$work/kt-$m-$r.err" >&2; exit 1; }
  done
  python3 - "$work" "$m" "$rounds" "$floors" <<'EOF'
import json, statistics, sys
work, m, rounds, floors = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
latency = m.endswith("_ms") or m.endswith("_ns")
for ours_m in [m] + [f for f in floors.split(",") if f]:
    ratios, pairs = [], []
    for r in range(1, rounds + 1):
        ours = json.load(open(f"{work}/ours-{m}-{r}.json"))[ours_m]["value"]
        theirs = json.load(open(f"{work}/kt-{m}-{r}.json"))[f"kt_{m}"]
        ratios.append(theirs / ours if latency else ours / theirs)
        pairs.append(f"{ours:.1f}/{theirs:.1f}")
    print(f"{ours_m} vs kt_{m}: median x Kotlin {statistics.median(ratios):.2f} "
          f"(rounds {', '.join(f'{x:.2f}' for x in ratios)}; ours/theirs {', '.join(pairs)})")
EOF
done
