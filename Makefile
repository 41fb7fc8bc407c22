# Two targets do all set-up: `make demo` (the story on the bundled dumps/) and `make test` (the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FORENSICS := $(BIN)/forensics

.PHONY: setup demo test bench readme-speed clean

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

# Every benchmarks/bench_*.py, one table (figure, baseline, ratio, goal, met), rows kept in bench-results.json.
bench: setup
	$(BIN)/python benchmarks/run_all.py --out bench-results.json

# The README's measured-speed section, from the last `make bench`.
readme-speed: bench-results.json
	$(BIN)/python tools/gen_readme_speed.py bench-results.json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
