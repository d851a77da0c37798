#!/usr/bin/env bash
# `make check`: the edit-test loop. The checks that run no test, then the tests that need no
# server (no PostgreSQL, Redis, MariaDB, BOINC client or browser) and are not slow, on SQLite,
# in one pytest process per core (pytest-xdist). Whole files go to one process (--dist
# loadfile), so a module's shared set-up, such as the seeded demo, is made once.
# Each process keeps its own test database between runs (--reuse-db; migrations still apply)
# and pytest's cache is on, so `make check PYTEST_ARGS=--lf` reruns only what failed last time;
# `PYTEST_ARGS=-n0` runs the tests in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv

bash .ci/lint.sh
printf '\n==> %s\n' "pytest: the tests that need no server"
# shellcheck disable=SC2086
$VENV/bin/pytest -q --reuse-db -n auto --dist loadfile \
  -m "not slow and not browser and not boinc_client and not postgres and not redis and not mysql" \
  ${PYTEST_ARGS:-} tests
