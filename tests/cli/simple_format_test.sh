#!/usr/bin/env bash
# End-to-end test of the `-w simple` format (docs/cli.md, "The simple
# format"): keys and values with spaces, '=', newlines, tabs, backslashes,
# bytes that are not UTF-8 and NUL, read back by the shell loops the page
# documents, and plain keys printed exactly as they always were.
#
#   bash tests/cli/simple_format_test.sh PATH/TO/etcd-recipes
#
# Starts a private etcd (ETCD_RECIPES_ETCD, default: etcd on PATH) on free
# loopback ports in a temporary directory. Prints one PASS/FAIL line per
# check and "N passed, M failed" at the end; exits 1 if anything failed, 77
# if etcd cannot be started.

# Checks are eval strings evaluated later: expansions in single quotes are intended.
# shellcheck disable=SC2016

set -u

TEST_NAME=simple-format-test
POLL_INTERVAL=0.05
# shellcheck source=tests/cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_etcd_or_skip

tool() { "$BIN" --endpoints "$EP" "$@"; }

# The awkward names and values, by suffix; every one but NUL fits a shell
# variable. The NUL value goes through files.
declare -A VALUE=(
  [plain]=value
  ["with space"]="  a b  c "
  ["eq=key"]="x=y=z"
  [$'new\nline']=$'line1\nline2\n'
  [$'tab\tkey']=$'t\tv'
  ['back\slash']='\n literal \x41 %s \c \\'
  [$'bin\xff']=$'\xfe\x01\xc3\xa9'
  [utf8-日本]="grüße"
  [empty]=""
)
printf 'a\0b' >"$WORK/nul.expected"

# put_all PREFIX: every case under PREFIX, and PREFIX"nul".
put_all() {
  local k
  for k in "${!VALUE[@]}"; do tool kv put "$1$k" -- "${VALUE[$k]}" >/dev/null || return 1; done
  tool kv put "$1nul" - <"$WORK/nul.expected" >/dev/null
}
# same_as_stored PREFIX: the decoded names and values (DECODED, set by the
# loops below) are exactly the cases, and $WORK/nul.got holds the NUL value.
same_as_stored() {
  local k
  ((${#DECODED[@]} == ${#VALUE[@]})) || return 1
  for k in "${!VALUE[@]}"; do
    [[ -v DECODED["$1$k"] && ${DECODED["$1$k"]} == "${VALUE[$k]}" ]] || return 1
  done
  cmp -s "$WORK/nul.got" "$WORK/nul.expected"
}

# --- kv get --prefix -----------------------------------------------------------------

put_all /g/ || fail "kv put of the cases"
tool kv get --prefix /g/ >"$WORK/get.out"
declare -A DECODED=()
# The loop of docs/cli.md, reading a file instead of a pipe (its variables
# stay in this shell).
while IFS= read -r line; do
  printf -v key '%b' "${line%%=*}"; printf -v value '%b' "${line#*=}"
  if [[ $key == /g/nul ]]; then  # NUL: only a file holds it
    printf '%b' "${line#*=}" >"$WORK/nul.got"
  else
    DECODED[$key]=$value
  fi
done <"$WORK/get.out"
check "kv get --prefix: one line per key, and the documented loop reads back every key and value exactly" \
  eval '(($(wc -l <"$WORK/get.out") == ${#VALUE[@]} + 1)) && same_as_stored /g/'
check "kv get --prefix: a key's space and '=' are escaped, a value's backslashes doubled" \
  eval 'grep -qxF "/g/with\\x20space=\\x20\\x20a\\x20b\\x20\\x20c\\x20" "$WORK/get.out" &&
        grep -qxF "/g/eq\\x3dkey=x\\x3dy\\x3dz" "$WORK/get.out" &&
        grep -qxF "/g/back\\\\slash=\\\\n\\x20literal\\x20\\\\x41\\x20%s\\x20\\\\c\\x20\\\\\\\\" "$WORK/get.out"'
check "kv get --prefix: bytes that are not UTF-8 are \\xHH, valid UTF-8 is printed as it is" \
  eval 'grep -qxF "/g/bin\\xff=\\xfe\\x01é" "$WORK/get.out" && grep -qxF "/g/utf8-日本=grüße" "$WORK/get.out"'
tool kv get --prefix /g/ --keys-only >"$WORK/keys.out"
check "kv get --keys-only: one escaped key per line" \
  eval '(($(wc -l <"$WORK/keys.out") == ${#VALUE[@]} + 1)) && grep -qxF "/g/new\\nline" "$WORK/keys.out"'
run kv get $'/g/new\nline'
check "kv get KEY prints the one value as stored (trailing newline and all)" \
  eval '((RC == 0)) && cmp -s "$WORK/out" <(printf "line1\nline2\n\n")'

# --- kv watch --------------------------------------------------------------------------

spawn watch kv watch --prefix /w/
# Until the watch is there, a put is not seen: put a probe until it is.
if wait_until 10 eval 'tool kv put /w/probe 1 >/dev/null; file_has "$WORK/watch.out" "PUT /w/probe"'; then
  put_all /w/
  tool kv del /w/probe >/dev/null
  wait_until 10 eval 'file_has "$WORK/watch.out" "^DELETE /w/probe$"'
fi
DECODED=()
deletes=0
while read -r op key value; do
  raw=$value
  printf -v key '%b' "$key"; printf -v value '%b' "$value"
  case $op:$key in
    PUT:/w/probe) ;;
    DELETE:/w/probe) deletes=$((deletes + 1)) ;;
    PUT:/w/nul) printf '%b' "$raw" >"$WORK/nul.got" ;;
    PUT:*) DECODED[$key]=$value ;;
  esac
done <"$WORK/watch.out"
check "kv watch: the documented 'while read -r op key value' loop reads back every key and value exactly" \
  eval '((deletes == 1)) && same_as_stored /w/'
check "kv watch: a plain key prints exactly as before (PUT KEY VALUE, DELETE KEY)" \
  eval 'grep -qxF "PUT /w/probe 1" "$WORK/watch.out" && grep -qxF "PUT /w/plain value" "$WORK/watch.out" &&
        grep -qxF "PUT /w/empty " "$WORK/watch.out" && grep -qxF "DELETE /w/probe" "$WORK/watch.out"'
kill -TERM "$PID"
finish "$PID" watch

spawn watchprev kv watch --prefix /wp/ --prev-kv
tool kv put /wp/k old >/dev/null
wait_until 10 eval 'file_has "$WORK/watchprev.out" "PUT /wp/k old"'
tool kv put /wp/k "new value" >/dev/null
wait_until 10 eval 'file_has "$WORK/watchprev.out" "was:"'
check "kv watch --prev-kv: the old value is an escaped field too" \
  eval 'grep -qxF "PUT /wp/k new\\x20value (was: old)" "$WORK/watchprev.out"'
kill -TERM "$PID"
finish "$PID" watchprev

# --- cache -----------------------------------------------------------------------------

put_all /c/
spawn cache cache /c
wait_until 10 eval 'file_has "$WORK/cache.err" "watching for changes"'
tool kv put "/c/with space" "changed value" >/dev/null
tool kv del $'/c/new\nline' >/dev/null
wait_until 10 eval 'file_has "$WORK/cache.out" "^REMOVED "'
DECODED=()
updated="" removed=""
while read -r op key value; do
  raw=$value
  printf -v key '%b' "$key"; printf -v value '%b' "$value"
  case $op:$key in
    ADDED:/c/nul) printf '%b' "$raw" >"$WORK/nul.got" ;;
    ADDED:*) DECODED[$key]=$value ;;
    UPDATED:*) updated="$key|$value" ;;
    REMOVED:*) removed=$key ;;
  esac
done <"$WORK/cache.out"
check "cache: the documented loop reads back every initial key and value exactly" eval 'same_as_stored /c/'
check "cache: UPDATED and REMOVED name the awkward keys exactly" \
  eval '[[ $updated == "/c/with space|changed value" && $removed == $'"'"'/c/new\nline'"'"' ]]'
check "cache: a plain key prints exactly as before (ADDED KEY VALUE)" eval 'grep -qxF "ADDED /c/plain value" "$WORK/cache.out"'
kill -TERM "$PID"
finish "$PID" cache

# --- queue pop -n ---------------------------------------------------------------------------

tool queue push q "plain" "two words" $'multi\nline\n' 'back\slash' $'\xff' >/dev/null
tool queue push q - <"$WORK/nul.expected" >/dev/null
tool queue push q "last one" >/dev/null
run queue pop q -n 6 --no-wait
got=()
while IFS= read -r line; do
  printf -v value '%b' "$line"
  got+=("$value")
done <"$WORK/out"
check "queue pop -n: one escaped value per line, read back exactly" \
  eval '((RC == 0 && ${#got[@]} == 6)) && [[ ${got[0]} == plain && ${got[1]} == "two words" &&
        ${got[2]} == $'"'"'multi\nline\n'"'"' && ${got[3]} == "back\\slash" && ${got[4]} == $'"'"'\xff'"'"' ]] &&
        cmp -s <(printf "%b" "$(sed -n 6p "$WORK/out")") "$WORK/nul.expected"'
run queue pop q
check "queue pop without -n prints the one value as stored" eval '((RC == 0)) && [[ $OUT == "last one" ]]'
tool queue push q p1 p2 >/dev/null
run queue pop q -n 2 --no-wait
check "queue pop -n: plain values print exactly as before" eval '((RC == 0)) && [[ $OUT == $'"'"'p1\np2'"'"' ]]'

# --- inspect -----------------------------------------------------------------------------------

run inspect /g
check "inspect: keys are escaped fields, one line per key" \
  eval '((RC == 0)) && [[ $OUT == *"key /g/new\\nline: "* && $OUT == *"key /g/with\\x20space: "* ]] &&
        (($(grep -c "^key /g/" <<<"$OUT") == ${#VALUE[@]} + 1))'

# --- plain keys, exactly as before ------------------------------------------------------------------

tool kv put /p/a 1 >/dev/null
tool kv put /p/b two >/dev/null
tool kv put /p/c "10.0.0.7:5432" >/dev/null
run kv get --prefix /p/
check "kv get --prefix: plain keys print KEY=VALUE exactly as before" \
  eval '((RC == 0)) && [[ $OUT == $'"'"'/p/a=1\n/p/b=two\n/p/c=10.0.0.7:5432'"'"' ]]'

echo "$passed passed, $failed failed"
((failed == 0))
