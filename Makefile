# Cobblestone: two commands.
#   make run   set up everything and serve the portal on http://127.0.0.1:8000/ (SQLite, no-server broker)
#   make test  set up everything (PostgreSQL, Redis, BOINC client, chromium when possible) and run all checks
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: run test venv lint bench clean

# pip's own "Location ... is ignored" notes about this machine's index setup are noise.
PIP_QUIET := grep -v '^WARNING: Location' || true

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@set -o pipefail; $(VENV)/bin/pip install -q --disable-pip-version-check --upgrade pip 2>&1 | { $(PIP_QUIET); }
	@set -o pipefail; $(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt 2>&1 | { $(PIP_QUIET); }
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

# Development mode for `make run`, `make test` and `make bench` (settings default to DEBUG off). `make run`
# keeps a secret key generated once in var/secret_key unless SECRET_KEY(_FILE) is given.
run test bench: export DEBUG ?= true
run: export SECRET_KEY_FILE := $(if $(SECRET_KEY)$(SECRET_KEY_FILE),$(SECRET_KEY_FILE),$(CURDIR)/var/secret_key)

var/secret_key:
	@mkdir -p var && umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@

run: venv $(if $(SECRET_KEY),,var/secret_key)
	@$(PY) manage.py migrate --noinput -v 0
	@$(PY) manage.py setup_periodic_tasks
	@$(PY) manage.py seed_demo --if-empty
	@$(PY) manage.py ensure_admin
	@$(PY) manage.py runall

test: venv
	@bash .ci/test.sh

lint: venv
	@$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports

bench: venv
	@$(PY) manage.py bench_scheduler

clean:
	rm -rf var .pytest_cache .ruff_cache
