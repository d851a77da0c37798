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

step "pytest on SQLite, then on PostgreSQL"
# The stock-client tests (tests/e2e) and the production stack (tests/production) spend most of
# their minutes waiting for real programs: the client's scheduler and transfer loops poll every
# 1 to 5 s, and the stack's daemons run every 10 s. Those two directories run in one pytest in
# the background, on SQLite, from start to end. Meanwhile the rest of the suite runs on SQLite
# and then on PostgreSQL, each in one process per core (pytest-xdist; whole files go to one
# process, so a module's shared set-up is made once). Every process has its own test database
# and live server; the stack and the clients take free ports. The SQLite coverage data are
# combined.
# A background command ignores Ctrl-C unless told otherwise; this one ends on it like the other
# (pytest then stops the clients and the stack it started).
PARALLEL="-n auto --dist loadfile"
rm -f var/coverage-waiting var/coverage-rest
(
  trap - INT
  COVERAGE_FILE=var/coverage-waiting exec $VENV/bin/pytest $NO_CACHE --cov=apps --cov-report= -q \
    tests/e2e tests/production
) >var/pytest-waiting.log 2>&1 &
waiting_pid=$!
# shellcheck disable=SC2086
COVERAGE_FILE=var/coverage-rest $VENV/bin/pytest $NO_CACHE $PARALLEL --cov=apps --cov-report= -q \
  --ignore=tests/e2e --ignore=tests/production
rest_rc=$?

pg_rc=0
if [ -n "${COBBLESTONE_TEST_DATABASE_URL:-}" ]; then
  # The whole suite again on PostgreSQL, except what does not depend on the database engine:
  # the browser and real-client tests, and slow tests not marked postgres (the distributed
  # and benchmark tests already ran against this server in the first pass).
  step "pytest on PostgreSQL (tests/e2e and tests/production may still be running)"
  # shellcheck disable=SC2086
  DATABASE_URL="$COBBLESTONE_TEST_DATABASE_URL" $VENV/bin/pytest $NO_CACHE $PARALLEL -q \
    -m "not browser and not boinc_client and (not slow or postgres)" tests
  pg_rc=$?
else
  step "pytest on PostgreSQL: SKIPPED (no PostgreSQL server could be started)"
fi

wait $waiting_pid
waiting_rc=$?
printf '\n--- tests/e2e and tests/production, run beside the rest ---\n'
cat var/pytest-waiting.log
$VENV/bin/coverage combine -q var/coverage-waiting var/coverage-rest \
  && $VENV/bin/coverage report --skip-covered --fail-under=80
coverage_rc=$?
sqlite_rc=$((rest_rc || waiting_rc || coverage_rc))

if [ $sqlite_rc -ne 0 ] || [ $pg_rc -ne 0 ]; then
  echo "FAILED: sqlite=$sqlite_rc postgresql=$pg_rc"
  exit 1
fi
echo "All checks passed."
