# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test test-fast check venv clean-var

run:
	./scripts/run.sh

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

# The quick part of the suite (no real worker processes, no browser).
test-fast: venv
	$(PY) -m pytest -m "not slow and not e2e and not browser and not chaos" $(PYTEST_ARGS)

# Static checks. mypy --strict on the metric core (configured in pyproject.toml).
check: venv
	$(PY) -m mypy

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

clean-var:
	rm -rf var
