# Two commands: `make run` (set up + demo) and `make test` (set up + every test tier).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test setup lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(PY) examples/demo.py

lint: setup
	$(VENV)/bin/ruff check python tests bench examples
	$(VENV)/bin/mypy

test: setup lint
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -q

clean:
	rm -rf $(VENV) build dist python/*.egg-info
