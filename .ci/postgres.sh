#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of store/postgres.
#   .ci/postgres.sh start DIR   install the server when absent (Debian's
#                               postgresql package), initdb + pg_ctl start in
#                               DIR as an unprivileged user, and print the
#                               export line for CAIRN_TEST_POSTGRES
#   .ci/postgres.sh stop DIR    stop that cluster and delete DIR
# The tests create one database per test through that URL and drop it.
set -euo pipefail
cmd=${1:?usage: postgres.sh start|stop DIR}
dir=${2:?usage: postgres.sh start|stop DIR}
port=${CAIRN_TEST_POSTGRES_PORT:-55432}

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

# as runs a command as the cluster's user: PostgreSQL refuses to run as root.
as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case $cmd in
start)
  if ! bin=$(bindir); then
    if [ "$(id -u)" != 0 ]; then
      echo "PostgreSQL is not installed: install the postgresql package (apt-get install postgresql) and run this again" >&2
      exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
    bin=$(bindir)
  fi
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  chmod 700 "$dir"
  as "$bin/initdb" -D "$dir/data" -U cairn --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  # fsync stays on: the durability figures compare like with like.
  as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=128MB" start >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  echo "export CAIRN_TEST_POSTGRES='postgres://cairn@127.0.0.1:$port/postgres?sslmode=disable'"
  ;;
stop)
  if bin=$(bindir) && [ -d "$dir/data" ]; then
    as "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: postgres.sh start|stop DIR" >&2
  exit 2
  ;;
esac
