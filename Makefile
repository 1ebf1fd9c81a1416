# Two commands: `make demo` and `make test`. Each bootstraps .venv on a fresh machine
# (only Python 3.11+ needed) and is quick once it exists.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint screenshots clean

$(PY):
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "dltui needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Stamps re-run the install only when pyproject.toml changes.
$(VENV)/.demo: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[tui]'
	touch $@

$(VENV)/.test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[tui,dev]'
	touch $@

demo: $(VENV)/.demo
	$(PY) -m dltui

# Style, then the walls: the layers of docs/architecture.md (import-linter) and types (mypy).
lint: $(VENV)/.test
	$(PY) -m ruff check dltui tests benchmarks screenshots
	$(PY) -m ruff format --check dltui tests benchmarks screenshots
	$(VENV)/bin/lint-imports
	$(PY) -m mypy

# In parallel (pytest-xdist): two workers per core, as most tests spend their time waiting on
# agents and sockets; the longest tests are handed out first (tests/conftest.py), and those that
# import TensorFlow into the worker itself go to one worker (an xdist_group). Bytecode is
# written even where the environment says not to: the suite starts hundreds of Python
# processes, and each would compile dltui (and each worker rewrite every test) again.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
test: lint
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=15

# SVG (and PNG where Debian's chromium is installed) from the real recordings in tests/fixtures.
screenshots: $(VENV)/.test
	$(PY) -m screenshots.make_screenshots

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
