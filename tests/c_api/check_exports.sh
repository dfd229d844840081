#!/usr/bin/env bash
# The C library exports the C API and nothing else: no C++ symbol of the
# client, recipes, asio or protobuf code linked into it.
#   check_exports.sh LIBRARY
set -uo pipefail
lib=$1
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
if [[ -z $syms ]]; then
  echo "no exported symbols found in $lib"
  exit 1
fi
bad=$(grep -v '^etcdr_' <<<"$syms")
if [[ -n $bad ]]; then
  echo "exported symbols outside the C API:"
  head -20 <<<"$bad"
  exit 1
fi
# Every function the header declares is there.
header=$(dirname "$0")/../../include/etcd_recipes.h
missing=0
for f in $(grep -oE '\betcdr_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u); do
  if ! grep -qx "$f" <<<"$syms"; then
    echo "declared but not exported: $f"
    missing=1
  fi
done
((missing == 0)) || exit 1
echo "$(wc -l <<<"$syms") symbols, all etcdr_*"
