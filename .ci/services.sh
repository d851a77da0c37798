#!/usr/bin/env bash
# Start the real parts the tests need, on loopback, in private directories:
# PostgreSQL, Redis and MariaDB (a BOINC project's database, for the import tests), plus
# the stock BOINC client, Debian's chromium and nginx, which the tests run as programs, and
# g++ with libboinc-app-dev, which build a BOINC API application for the client to run;
# promtool (Debian's prometheus package) and docker-compose 1.29, which check the files of
# deploy/monitoring/ and deploy/container/ (no Docker engine is started here).
# Installs missing Debian packages when running as root.
# Writes the environment the tests read into var/services.env.
# With CI set, a part that cannot be provided is a failure; otherwise it is
# reported as skipped and the tests that need it are skipped with that reason.
set -u
cd "$(dirname "$0")/.."
VAR="$PWD/var"
mkdir -p "$VAR"
ENV_FILE="$VAR/services.env"
: > "$ENV_FILE"
PG_PORT="${COBBLESTONE_TEST_PG_PORT:-54329}"
REDIS_PORT="${COBBLESTONE_TEST_REDIS_PORT:-63799}"
MYSQL_PORT="${COBBLESTONE_TEST_MYSQL_PORT:-33069}"
failures=()
say() { printf '[services] %s\n' "$*"; }

apt_install() {
  # Install Debian packages if missing and we are root; quiet unless it fails.
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then say "not root: cannot install ${missing[*]}"; return 1; fi
  say "installing ${missing[*]} from Debian"
  if [ ! -f "$VAR/.apt-updated" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 && touch "$VAR/.apt-updated"
  fi
  # policy-rc.d keeps the packages' own services (boinc-client, redis, postgresql) from starting.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$VAR/apt.log" 2>&1
  local rc=$?
  rm -f /usr/sbin/policy-rc.d
  [ $rc -eq 0 ] || { say "apt-get install failed (see var/apt.log)"; return 1; }
}

start_postgres() {
  apt_install postgresql || return 1
  local bindir
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$bindir" ] || { say "no PostgreSQL binaries"; return 1; }
  local data=/tmp/cobblestone-pg-$PG_PORT runas=()
  if [ "$(id -u)" = 0 ]; then runas=(runuser -u postgres --); fi
  if ! "${runas[@]}" "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    if [ ! -f "$data/PG_VERSION" ]; then
      mkdir -p "$data" && { [ "$(id -u)" = 0 ] && chown postgres:postgres "$data"; true; }
      "${runas[@]}" "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$VAR/pg-initdb.log" 2>&1 \
        || { say "initdb failed (var/pg-initdb.log)"; return 1; }
    fi
    "${runas[@]}" "$bindir/pg_ctl" -D "$data" -w -l "$data/server.log" \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k /tmp -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null 2>&1 || { say "PostgreSQL did not start ($data/server.log)"; return 1; }
  fi
  echo "COBBLESTONE_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/cobblestone" >> "$ENV_FILE"
  say "PostgreSQL running on 127.0.0.1:$PG_PORT"
}

start_redis() {
  apt_install redis-server || return 1
  if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    mkdir -p "$VAR/redis"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --dir "$VAR/redis" \
      --save '' --appendonly no --logfile "$VAR/redis/redis.log" >/dev/null 2>&1 || return 1
    for _ in 1 2 3 4 5 6 7 8 9 10; do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.3; done
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || { say "Redis did not start"; return 1; }
  fi
  echo "COBBLESTONE_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0" >> "$ENV_FILE"
  say "Redis running on 127.0.0.1:$REDIS_PORT"
}

start_mariadb() {
  # A private server for the BOINC import tests: own datadir under /tmp, loopback only,
  # root over TCP without a password (like the PostgreSQL above, trust on loopback).
  apt_install mariadb-server || return 1
  local data=/tmp/cobblestone-mariadb-$MYSQL_PORT runas=()
  local url="mysql://root@127.0.0.1:$MYSQL_PORT/boinc_import_test"
  if [ "$(id -u)" = 0 ]; then runas=(--user=root); fi
  if ! mariadb-admin --protocol=tcp -h 127.0.0.1 -P "$MYSQL_PORT" -u root status >/dev/null 2>&1; then
    if [ ! -d "$data/mysql" ]; then
      mkdir -p "$data"
      mariadb-install-db --datadir="$data" "${runas[@]}" --auth-root-authentication-method=normal \
        --skip-test-db >"$VAR/mariadb-install.log" 2>&1 \
        || { say "mariadb-install-db failed (var/mariadb-install.log)"; return 1; }
    fi
    # Durability is not needed for test data: no fsync per commit, a small buffer pool.
    setsid /usr/sbin/mariadbd --no-defaults --datadir="$data" "${runas[@]}" --bind-address=127.0.0.1 \
      --port="$MYSQL_PORT" --socket="$data/mysqld.sock" --pid-file="$data/mysqld.pid" \
      --log-error="$data/server.log" --skip-name-resolve --innodb-flush-log-at-trx-commit=0 \
      --innodb-buffer-pool-size=256M --innodb-doublewrite=0 --max-allowed-packet=64M \
      --local-infile=1 >/dev/null 2>&1 &
    for _ in $(seq 1 60); do
      mariadb-admin --protocol=tcp -h 127.0.0.1 -P "$MYSQL_PORT" -u root status >/dev/null 2>&1 && break
      sleep 0.5
    done
    mariadb-admin --protocol=tcp -h 127.0.0.1 -P "$MYSQL_PORT" -u root status >/dev/null 2>&1 \
      || { say "MariaDB did not start ($data/server.log)"; return 1; }
  fi
  echo "COBBLESTONE_TEST_MYSQL_URL=$url" >> "$ENV_FILE"
  say "MariaDB running on 127.0.0.1:$MYSQL_PORT"
}

find_boinc() {
  apt_install boinc-client || return 1
  command -v boinc >/dev/null && command -v boinccmd >/dev/null || { say "boinc binaries not found"; return 1; }
  echo "COBBLESTONE_TEST_BOINC=$(command -v boinc)" >> "$ENV_FILE"
  say "BOINC client: $(boinc --version 2>/dev/null | head -1)"
}

find_boinc_app_dev() {
  # A BOINC API application built in the trickle end-to-end test, as projects build theirs.
  apt_install g++ libboinc-app-dev || return 1
  [ -f /usr/include/boinc/boinc_api.h ] || { say "/usr/include/boinc/boinc_api.h missing"; return 1; }
  command -v g++ >/dev/null || { say "g++ not found"; return 1; }
  echo "COBBLESTONE_TEST_BOINC_APP_CXX=$(command -v g++)" >> "$ENV_FILE"
  say "BOINC app build: $(g++ --version | head -1), libboinc-app-dev $(dpkg-query -W -f='${Version}' libboinc-app-dev)"
}

find_chromium() {
  apt_install chromium || return 1
  [ -x /usr/bin/chromium ] || { say "/usr/bin/chromium missing"; return 1; }
  echo "COBBLESTONE_TEST_CHROMIUM=/usr/bin/chromium" >> "$ENV_FILE"
  say "Chromium: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
}

find_nginx() {
  # The production test runs nginx itself, with a private configuration (never the service).
  apt_install nginx || return 1
  local nginx
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$nginx" ] || { say "nginx binary not found"; return 1; }
  echo "COBBLESTONE_TEST_NGINX=$nginx" >> "$ENV_FILE"
  say "nginx: $("$nginx" -v 2>&1 | head -1)"
}

find_promtool() {
  # Only its promtool is used: the package's own server is kept from starting (policy-rc.d).
  apt_install prometheus || return 1
  command -v promtool >/dev/null || { say "promtool not found"; return 1; }
  echo "COBBLESTONE_TEST_PROMTOOL=$(command -v promtool)" >> "$ENV_FILE"
  say "promtool: $(promtool --version 2>&1 | head -1)"
}

find_docker_compose() {
  # Debian 12's compose (1.29): the container stack's file must stay readable by it.
  apt_install docker-compose || return 1
  command -v docker-compose >/dev/null || { say "docker-compose not found"; return 1; }
  say "docker-compose: $(docker-compose version --short 2>/dev/null)"
}

start_postgres || failures+=("PostgreSQL")
start_redis || failures+=("Redis")
start_mariadb || failures+=("MariaDB")
find_boinc || failures+=("BOINC client")
find_boinc_app_dev || failures+=("g++ and libboinc-app-dev")
find_chromium || failures+=("Chromium")
find_nginx || failures+=("nginx")
find_promtool || failures+=("promtool")
find_docker_compose || failures+=("docker-compose")

if [ ${#failures[@]} -gt 0 ]; then
  if [ -n "${CI:-}" ]; then
    say "FAILED (CI is set): could not provide: ${failures[*]}"
    exit 1
  fi
  say "SKIPPED: ${failures[*]} not available; tests that need them will be skipped and say so."
fi
exit 0
