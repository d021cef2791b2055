#!/bin/sh
# Starts Postgres as the postgres user; on the first start (an empty PGDATA) it
# makes the cluster: the user and the database rc, password POSTGRES_PASSWORD,
# password logins (scram-sha-256) from any address, trust on the local socket.
set -eu
die() { printf 'rc-postgres: %s\n' "$*" >&2; exit 1; }
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || die "POSTGRES_PASSWORD is not set: the first start makes the user rc with it"
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pw"
  chown postgres "$pw"
  as_postgres "$bin/initdb" -D "$PGDATA" -U rc --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  echo 'CREATE DATABASE rc OWNER rc;' | as_postgres "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
  echo "rc-postgres: made the cluster in $PGDATA (user and database rc)"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
