# Two targets do all set-up: `make demo` (the story on the bundled dumps/) and `make test` (the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FORENSICS := $(BIN)/forensics

.PHONY: setup demo test bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test]'
	touch $@

demo: setup
	@$(FORENSICS) demo

test: setup
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python benchmarks/bench_core.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
