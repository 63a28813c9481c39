#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benches: Debian's postgresql package (installed
# when missing), a temporary data directory, a free loopback port, trust authentication for the
# local user "ifjudge" only. Prints the URL of its "postgres" database on stdout.
#   bash scripts/pg_cluster.sh start DIR     -> postgresql://ifjudge@127.0.0.1:PORT/postgres
#   bash scripts/pg_cluster.sh stop DIR
# max_connections is 200 (PostgreSQL's default is 100): the 100-annotator load test holds one
# connection per annotator process plus the test's own (docs/deployment.md, "Connections").
# PG_MAX_CONNECTIONS=N sets another value (e.g. 100 to see the refusal at PostgreSQL's default).
set -euo pipefail
cmd=${1:?start or stop}
dir=${2:?a directory for the cluster}
max_connections=${PG_MAX_CONNECTIONS:-200}

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

as_owner() {  # PostgreSQL refuses to run as root: run it as the postgres user then (from /, a
  # directory it may enter)
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

if [ "$cmd" = stop ]; then
  bin=$(bindir) || exit 0
  [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  exit 0
fi

if ! bin=$(bindir); then
  echo "installing Debian's postgresql for the PostgreSQL half of the tests" >&2
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    sudo apt-get update -qq >&2 && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  bin=$(bindir)
fi
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_owner "$bin/initdb" -D "$dir/data" -U ifjudge -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c max_connections=$max_connections" \
  start >/dev/null
echo "postgresql://ifjudge@127.0.0.1:$port/postgres"
