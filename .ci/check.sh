#!/usr/bin/env bash
# `make check`: the edit-test loop. The checks that run no test, then the tests that need no
# server (no PostgreSQL, Redis, MariaDB, BOINC client or browser) and are not slow, on SQLite.
# The test database is kept between runs (--reuse-db; migrations still apply) and pytest's
# cache is on, so `make check PYTEST_ARGS=--lf` reruns only what failed last time.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv

bash .ci/lint.sh
printf '\n==> %s\n' "pytest: the tests that need no server"
# shellcheck disable=SC2086
$VENV/bin/pytest -q --reuse-db \
  -m "not slow and not browser and not boinc_client and not postgres and not redis and not mysql" \
  ${PYTEST_ARGS:-} tests
