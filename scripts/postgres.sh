#!/usr/bin/env bash
# PostgreSQL for capstore's replicas (feature `postgres`, `capstore::sync`) and their tests.
#
#   bash scripts/postgres.sh install       # the Debian package, when initdb is missing
#   bash scripts/postgres.sh start DIR     # a cluster in DIR (made if new), on 127.0.0.1; prints its URL
#   bash scripts/postgres.sh stop DIR      # stops it (DIR and its data stay)
#   bash scripts/postgres.sh run CMD...    # a throwaway cluster for CMD, removed after
#
# `run` exports CAPSTORE_TEST_PG (the URL) and CAPSTORE_TEST_PG_DIR to CMD; the fault tests stop
# and start that cluster with `stop "$CAPSTORE_TEST_PG_DIR"` / `start "$CAPSTORE_TEST_PG_DIR"`
# (same port, same data). A cluster listens on loopback only, on the first free port from 55432,
# and trusts local connections as user `capstore`: for tests and a team's own machine, not for a
# network. Run as root, the server runs as the `postgres` user (root cannot run it).
set -euo pipefail

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

install() {
  if pg_bin >/dev/null; then return 0; fi
  echo "postgres.sh: installing the Debian package postgresql" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Only the throwaway clusters this script makes: no default cluster that a machine with
  # systemd would start, keep running after the tests and start again at boot.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/capstore.conf
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  pg_bin >/dev/null || { echo "postgres.sh: initdb still missing after install" >&2; exit 1; }
}

# Runs a command as the server's user: `postgres` when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  local port
  for port in $(seq 55432 55531); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
  done
  echo "postgres.sh: no free port in 55432-55531" >&2
  return 1
}

start() {
  local dir=${1:?usage: postgres.sh start DIR}
  install
  local bin port
  bin=$(pg_bin)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    port=$(free_port)
    if [ "$(id -u)" = 0 ]; then
      chmod 755 "$dir"
      mkdir -p "$dir/data" && chown postgres: "$dir/data"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U capstore --auth=trust -E UTF8 >/dev/null
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/data'
max_connections = 200
EOF
    echo "postgres://capstore@127.0.0.1:$port/postgres" >"$dir/url"
  fi
  if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 start >/dev/null
  fi
  cat "$dir/url"
}

stop() {
  local dir=${1:?usage: postgres.sh stop DIR}
  local bin
  bin=$(pg_bin) || return 0
  if [ -f "$dir/data/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
  fi
}

run() {
  RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/capstore-pg.XXXXXX")
  # Stop and remove the cluster however CMD ends.
  trap 'stop "$RUN_DIR" || true; rm -rf "$RUN_DIR"' EXIT
  CAPSTORE_TEST_PG=$(start "$RUN_DIR")
  export CAPSTORE_TEST_PG CAPSTORE_TEST_PG_DIR="$RUN_DIR"
  echo "postgres.sh: $CAPSTORE_TEST_PG ($RUN_DIR)" >&2
  "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
  install) install ;;
  start) start "$@" ;;
  stop) stop "$@" ;;
  run) run "$@" ;;
  *) echo "usage: postgres.sh install | start DIR | stop DIR | run CMD..." >&2; exit 2 ;;
esac
