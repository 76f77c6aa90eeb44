# Developer entry points. Everything runs inside .venv, built from $(PYTHON).
# Installs are keyed on pyproject.toml through stamp files inside .venv, so a second
# `make test` with nothing changed does not call pip again.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

STAMP_INSTALL     := $(VENV)/.stamp-install
STAMP_INSTALL_DEV := $(VENV)/.stamp-install-dev

.PHONY: venv install install-dev demo test clean

venv: $(BIN)/python

# Only when the interpreter is missing; the stamps below depend on it order-only, so
# recreating .venv (which deletes the stamps with it) reinstalls.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(STAMP_INSTALL)

install-dev: $(STAMP_INSTALL_DEV)

$(STAMP_INSTALL): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

# The dev install is a superset of the plain one, so it refreshes both stamps.
$(STAMP_INSTALL_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP_INSTALL) $@

demo: install
	$(BIN)/radixkv demo

test: install-dev
	$(BIN)/ruff check src tests
	$(BIN)/mypy --strict src/
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist src/*.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
