#!/usr/bin/env bash
# `make test`: real services, lint, types, Django checks, the suite on SQLite, then on PostgreSQL.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
step() { printf '\n==> %s\n' "$*"; }

step "services (PostgreSQL, Redis, BOINC client, chromium, nginx)"
bash .ci/services.sh || exit 1
set -a; source var/services.env; set +a

bash .ci/lint.sh || exit 1

# No cache: every run of the whole suite starts from nothing (a developer's --lf is `make check`'s).
NO_CACHE="-p no:cacheprovider"

step "pytest on SQLite"
$VENV/bin/pytest $NO_CACHE --cov=apps --cov-report=term:skip-covered --cov-fail-under=80 -q
sqlite_rc=$?

pg_rc=0
if [ -n "${COBBLESTONE_TEST_DATABASE_URL:-}" ]; then
  # The whole suite again on PostgreSQL, except what does not depend on the database engine:
  # the browser and real-client tests, and slow tests not marked postgres (the distributed
  # and benchmark tests already ran against this server in the first pass).
  step "pytest on PostgreSQL"
  DATABASE_URL="$COBBLESTONE_TEST_DATABASE_URL" $VENV/bin/pytest $NO_CACHE -q \
    -m "not browser and not boinc_client and (not slow or postgres)" tests
  pg_rc=$?
else
  step "pytest on PostgreSQL: SKIPPED (no PostgreSQL server could be started)"
fi

if [ $sqlite_rc -ne 0 ] || [ $pg_rc -ne 0 ]; then
  echo "FAILED: sqlite=$sqlite_rc postgresql=$pg_rc"
  exit 1
fi
echo "All checks passed."
