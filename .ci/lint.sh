#!/usr/bin/env bash
# The checks that run no test: lint, types, import contracts, Django's checks. `make test`
# and `make check` both start with them.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
step() { printf '\n==> %s\n' "$*"; }

step "ruff"
$VENV/bin/ruff check .
$VENV/bin/ruff format --check .
step "types"
DEBUG="${DEBUG:-true}" $VENV/bin/mypy
step "import layers"
$VENV/bin/lint-imports
step "django checks"
$VENV/bin/python manage.py check
$VENV/bin/python manage.py makemigrations --check --dry-run
