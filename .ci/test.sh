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
# The stock-client tests (tests/e2e) and the production stack (tests/production) spend most of
# their minutes waiting for real programs: the client's scheduler and transfer loops poll every
# 1 to 5 s, and the stack's daemons run every 10 s. Those two directories run in a second
# pytest beside the rest (each process has its own test database, live server and coverage
# data; the stack and the clients take free ports); the coverage data are combined.
# A background command ignores Ctrl-C unless told otherwise; this one ends on it like the other
# (pytest then stops the clients and the stack it started).
rm -f var/coverage-waiting var/coverage-rest
(
  trap - INT
  COVERAGE_FILE=var/coverage-waiting exec $VENV/bin/pytest $NO_CACHE --cov=apps --cov-report= -q \
    tests/e2e tests/production
) >var/pytest-waiting.log 2>&1 &
waiting_pid=$!
COVERAGE_FILE=var/coverage-rest $VENV/bin/pytest $NO_CACHE --cov=apps --cov-report= -q \
  --ignore=tests/e2e --ignore=tests/production
rest_rc=$?
wait $waiting_pid
waiting_rc=$?
printf '\n--- tests/e2e and tests/production, run beside the rest ---\n'
cat var/pytest-waiting.log
$VENV/bin/coverage combine -q var/coverage-waiting var/coverage-rest \
  && $VENV/bin/coverage report --skip-covered --fail-under=80
coverage_rc=$?
sqlite_rc=$((rest_rc || waiting_rc || coverage_rc))

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
