#!/usr/bin/env bash
# provide.sh [VERSION]  provides etcd and etcdctl of one pinned release and
# prints the etcd binary's path on stdout (everything else goes to stderr).
#
#   VERSION  a minor (3.4, 3.5, 3.6, 3.7), an exact version from versions.txt
#            (3.6.16), or nothing / "default" for the default release.
#
# 3.5 and newer are built from the Go module proxy into
#   ${ETCD_RECIPES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-recipes}/etcd/<x.y.z>/{etcd,etcdctl}
# once; later calls print the cached path at once and need no network. 3.4 is
# Debian's etcd-server / etcd-client (installed with apt-get when missing).
#
# Other modes:
#   provide.sh --list           the pinned releases: "minor version source"
#   provide.sh --resolve VER    the exact version VER stands for
#   provide.sh --cached VER     the etcd binary's path if VER needs no build
#                               or install now (exit 1, nothing printed, if it does)
#   provide.sh --go-client VER  the go.etcd.io/etcd/client/v3 version for VER
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pins="$here/versions.txt"

log() { echo "etcd-releases: $*" >&2; }
die() { log "$*"; exit 1; }

# Lines "minor version source" of versions.txt.
releases() { awk '!/^#/ && NF == 3 { print $1, $2, $3 }' "$pins"; }
default_minor() { awk '$1 == "default" { print $2 }' "$pins"; }

# resolve VER -> "version source"
resolve() {
  local want="$1"
  [ -z "$want" ] || [ "$want" = default ] && want="$(default_minor)"
  want="${want#v}"
  local minor version source
  while read -r minor version source; do
    if [ "$want" = "$minor" ] || [ "$want" = "$version" ]; then
      echo "$version $source"
      return 0
    fi
  done < <(releases)
  die "no pinned etcd release matches '$1' (pinned: $(releases | awk '{ print $2 }' | paste -sd, -); see $pins)"
}

cache_root() { echo "${ETCD_RECIPES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-recipes}"; }

provide_debian() {  # $1 = exact version
  local version="$1"
  if ! command -v /usr/bin/etcd >/dev/null || ! command -v /usr/bin/etcdctl >/dev/null; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    log "installing Debian's etcd-server and etcd-client"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      etcd-server etcd-client >&2
  fi
  local got
  got="$(/usr/bin/etcd --version 2>/dev/null | awk '/^etcd Version:/ { print $3 }')"
  if [ "$got" != "$version" ]; then
    # Debian may ship a patch release after the pin: same minor, say so.
    [ "${got%.*}" = "${version%.*}" ] ||
      die "/usr/bin/etcd is '$got', not the pinned $version (Debian's etcd-server package)"
    log "Debian's etcd-server is $got, the pin says $version: using $got (update $pins)"
  fi
  echo /usr/bin/etcd
}

provide_go() {  # $1 = exact version
  local version="$1"
  local dir
  dir="$(cache_root)/etcd/$version"
  if [ -x "$dir/etcd" ] && [ -x "$dir/etcdctl" ]; then
    echo "$dir/etcd"
    return 0
  fi
  command -v go >/dev/null ||
    die "building etcd $version needs the Go toolchain (go 1.21 or newer on PATH; it fetches the newer toolchain the release wants through the Go module proxy)"
  mkdir -p "$dir"
  # One build per release at a time: a second caller waits, then finds it.
  exec 9>"$dir/.lock"
  flock -w 1800 9 || die "timed out after 30 min waiting for another build of etcd $version ($dir/.lock)"
  if [ -x "$dir/etcd" ] && [ -x "$dir/etcdctl" ]; then
    echo "$dir/etcd"
    return 0
  fi

  local src="$dir/src"
  mkdir -p "$src/etcd" "$src/etcdctl"
  cp "$here/etcd/main.go" "$src/etcd/main.go"
  cp "$here/etcdctl/main.go" "$src/etcdctl/main.go"
  local gomod
  gomod="$(printf 'module etcd-recipes/etcd-release\n\ngo 1.21\n\nrequire (\n\tgo.etcd.io/etcd/etcdctl/v3 v%s\n\tgo.etcd.io/etcd/server/v3 v%s\n)\n' "$version" "$version")"
  # go.mod and go.sum are produced here, per release; a go.sum from an earlier
  # (interrupted) run is kept, so a rebuild verifies against it offline.
  if [ ! -f "$src/go.sum" ] || [ ! -f "$src/.template" ] || [ "$(cat "$src/.template")" != "$gomod" ]; then
    printf '%s\n' "$gomod" >"$src/go.mod"
    printf '%s\n' "$gomod" >"$src/.template"
    rm -f "$src/go.sum"
  fi

  log "building etcd and etcdctl $version from the Go module proxy (once; a few minutes) into $dir"
  local start=$SECONDS
  (
    cd "$src"
    export GOFLAGS="-mod=mod ${GOFLAGS:-}" CGO_ENABLED=0
    # Offline first (everything may be in the module cache already), then
    # through the module proxy.
    if ! GOPROXY=off go mod tidy >/dev/null 2>&1; then
      go mod tidy >&2
    fi
    go build -trimpath -ldflags "-s -w" -o "$dir/.etcd.tmp" ./etcd >&2
    go build -trimpath -ldflags "-s -w" -o "$dir/.etcdctl.tmp" ./etcdctl >&2
  ) || die "building etcd $version failed (sources in $src)"
  local got
  got="$("$dir/.etcd.tmp" --version | awk '/^etcd Version:/ { print $3 }')"
  [ "$got" = "$version" ] || die "the built etcd reports version '$got', not $version"
  mv -f "$dir/.etcdctl.tmp" "$dir/etcdctl"
  mv -f "$dir/.etcd.tmp" "$dir/etcd"
  log "etcd $version built in $((SECONDS - start)) s"
  echo "$dir/etcd"
}

case "${1:-}" in
  --list)
    releases
    ;;
  --resolve)
    resolve "${2:-}" | awk '{ print $1 }'
    ;;
  --cached)
    read -r version source < <(resolve "${2:-}")
    case "$source" in
      debian) dir=/usr/bin ;;
      *) dir="$(cache_root)/etcd/$version" ;;
    esac
    [ -x "$dir/etcd" ] && [ -x "$dir/etcdctl" ] || exit 1
    if [ "$source" = debian ]; then
      got="$("$dir/etcd" --version 2>/dev/null | awk '/^etcd Version:/ { print $3 }')"
      [ "${got%.*}" = "${version%.*}" ] || exit 1
    fi
    echo "$dir/etcd"
    ;;
  --go-client)
    read -r version source < <(resolve "${2:-}")
    if [ "$source" = go ]; then
      echo "$version"
    else
      # No client/v3 module below 3.5: the oldest supported Go client.
      releases | awk '$3 == "go" { print $2; exit }'
    fi
    ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    ;;
  *)
    read -r version source < <(resolve "${1:-}")
    case "$source" in
      debian) provide_debian "$version" ;;
      go) provide_go "$version" ;;
      *) die "unknown source '$source' for $version in $pins" ;;
    esac
    ;;
esac
