# Cobblestone: two commands.
#   make run   set up everything and serve the portal on http://127.0.0.1:8000/ (SQLite, no-server broker)
#   make test  set up everything (PostgreSQL, Redis, BOINC client, chromium when possible) and run all checks
#   make check the edit-test loop: lint, types, import contracts, Django checks, tests that need no server
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# One stamp per set of requirements installed, named by the hash of the files it came from:
# production's (make run), and production's with the development tools (make test, check, lint).
STAMP := $(VENV)/.installed-run-$(shell cat requirements.txt | sha1sum | cut -c1-12)
DEV_STAMP := $(VENV)/.installed-dev-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)

.PHONY: run test check venv venv-dev lint bench clean

# pip's own "Location ... is ignored" notes about this machine's index setup are noise.
PIP_QUIET := grep -v '^WARNING: Location' || true
# Progress of the install: one line per package pip fetches, then what it installed; the full
# output is kept in $(PIP_LOG) and its end shown if pip fails.
PIP_LOG := $(VENV)/pip-install.log
PIP_PROGRESS := tee $(PIP_LOG) | grep --line-buffered -E '^(Collecting|Installing collected|Successfully installed)' \
	| sed -u -e 's/^Collecting \([^ ]*\).*/  fetching \1/' -e 's/^Installing collected packages: .*/  installing.../' \
	-e 's/^Successfully installed .*/  installed./' || true

# $(call pip_install,FILE): the virtualenv if missing, then FILE's requirements.
define pip_install
	@test -x $(PY) || { echo "[setup] creating the virtualenv $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "[setup] installing $(1) into $(VENV) (a few minutes the first time)"
	@set -o pipefail; $(VENV)/bin/pip install -q --disable-pip-version-check --upgrade pip 2>&1 | { $(PIP_QUIET); }
	@set -o pipefail; $(VENV)/bin/pip install --disable-pip-version-check --progress-bar off -r $(1) 2>&1 \
		| { $(PIP_PROGRESS); } || { echo "[setup] pip failed; the end of $(PIP_LOG):"; tail -25 $(PIP_LOG); exit 1; }
endef

$(STAMP): requirements.txt
	$(call pip_install,requirements.txt)
	@rm -f $(VENV)/.installed-run-* && touch $(STAMP)

# The development file names requirements.txt too, so its install also stands for production's.
$(DEV_STAMP): requirements.txt requirements-dev.txt
	$(call pip_install,requirements-dev.txt)
	@rm -f $(VENV)/.installed-run-* $(VENV)/.installed-dev-* && touch $(STAMP) $(DEV_STAMP)

venv: $(STAMP)
venv-dev: $(DEV_STAMP)

# Development mode for `make run`, `make test` and `make bench` (settings default to DEBUG off). `make run`
# keeps a secret key generated once in var/secret_key unless SECRET_KEY(_FILE) is given.
run test check bench: export DEBUG ?= true
run: export SECRET_KEY_FILE := $(if $(SECRET_KEY)$(SECRET_KEY_FILE),$(SECRET_KEY_FILE),$(CURDIR)/var/secret_key)

var/secret_key:
	@mkdir -p var && umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@

# runall's options, e.g. make run RUNALL_ARGS="--bind 0.0.0.0:8000" (manage.py runall --help).
run: venv $(if $(SECRET_KEY),,var/secret_key)
	@echo "[run] migrating the database"
	@$(PY) manage.py migrate --noinput -v 0
	@$(PY) manage.py setup_periodic_tasks
	@echo "[run] the demo project and the admin login"
	@$(PY) manage.py seed_demo --if-empty
	@$(PY) manage.py ensure_admin
	@$(PY) manage.py runall $(RUNALL_ARGS)

test: venv-dev
	@bash .ci/test.sh

check: venv-dev
	@bash .ci/check.sh

lint: venv-dev
	@bash .ci/lint.sh

bench: venv
	@$(PY) manage.py bench_scheduler

clean:
	rm -rf var .pytest_cache .ruff_cache
