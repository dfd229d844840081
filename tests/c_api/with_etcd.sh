#!/usr/bin/env bash
# Runs a program against a private single-member etcd (tests/cli/lib.sh),
# with the etcd endpoint as its last argument:
#   with_etcd.sh PROGRAM [ARGS...]
# Exits with the program's status (77, a skip, if etcd cannot start).
# shellcheck shell=bash
set -uo pipefail
TEST_NAME=c_api
# shellcheck source=../cli/lib.sh
source "$(dirname "$0")/../cli/lib.sh"
start_etcd_or_skip
timeout -k 5 240 "$@" "$EP"
