# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
# The metric core's own environment: no Django in it.
CORE_VENV ?= .venv-core
PY := $(VENV)/bin/python
# The suite runs in parallel (pytest-xdist), one process per core by default; PYTEST_WORKERS=0 runs it serially.
# --dist loadfile keeps a module's tests (and its module-scoped servers) in one process.
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter 0 1,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: run test test-fast check check-types check-code check-core venv venv-core native clean-var

run:
	./scripts/run.sh

test: venv native
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The quick part of the suite, run before every commit: no real worker processes, servers or browser, nothing
# over ~2 s (marked slow); under 3 minutes on 2 cores (docs/testing.md).
test-fast: venv native
	$(PY) -m pytest $(XDIST) -m "not slow and not e2e and not browser and not chaos" $(PYTEST_ARGS)

# The gates (CONTRIBUTING.md): mypy --strict on the metric core and mypy on the Django packages, then the gates
# CI runs before the tests.
check: check-types check-code

# Two runs, one configuration each: strict on evaluation/ (pyproject.toml), then the Django packages with the
# django-stubs and DRF plugins at a lower level (mypy-django.ini).
check-types: venv
	$(PY) -m mypy
	$(PY) -m mypy --config-file mypy-django.ini

# Lint and import order, the import contracts (pyproject.toml) and what they do not see (tests/architecture: cycles
# counting imports inside functions, the documents against the tree; a few seconds, no database), no missing
# migration, the core's tests without Django. (.ci/run runs `make check`: these and check-types.)
check-code: venv venv-core
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	env -u DATABASE_URL -u CELERY_BROKER_URL -u CACHE_URL $(PY) -m pytest -q -p no:cacheprovider -n 0 tests/architecture
	$(PY) manage.py makemigrations --check --dry-run
	$(MAKE) check-core

check-core: venv-core native
	LEXBOARD_REQUIRE_NATIVE=1 $(CORE_VENV)/bin/python -m pytest -q -p no:django -p no:cacheprovider -W ignore::pytest.PytestConfigWarning --confcutdir=tests/evaluation tests/evaluation

venv: $(VENV)/.installed native
venv-core: $(CORE_VENV)/.installed

# The command line's compiled scorer for plain runs (evaluation/fastscore_c/, setup.py), built in place with
# the project's interpreter: gcc and Python's headers are all it needs. Without it every run takes the numpy
# path (same numbers, slower start); the core's tests require it (LEXBOARD_REQUIRE_NATIVE).
NATIVE = evaluation/_fastscore$(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
native: $(NATIVE)
$(NATIVE): $(wildcard evaluation/fastscore_c/*.c evaluation/fastscore_c/*.h) setup.py $(VENV)/.installed
	$(PY) setup.py --quiet build_ext --inplace

$(CORE_VENV)/.installed: requirements-core.txt
	test -x $(CORE_VENV)/bin/python || $(PYTHON) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CORE_VENV)/bin/python -m pip install --quiet -r requirements-core.txt
	touch $@

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

clean-var:
	rm -rf var
