# Two targets do all set-up: `make demo` (the story on the bundled dumps/) and `make test` (the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FORENSICS := $(BIN)/forensics

.PHONY: setup demo test fuzz bench readme-speed clean

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

# Exploration beyond the suite's fixed examples, not part of `make test`: the property tests with random seeds
# (FORENSICS_HYPOTHESIS_PROFILE=fuzz), 20,000 generated register logs against the per-line parser, and 10,000
# mutated models through graph / extract / relayout / decode with no escape allowed. FORENSICS_FUZZ_MODELS=DIR
# adds a directory of real .tflite models to the mutated ones. A failure prints its seed; save it as an @example.
fuzz: setup
	FORENSICS_HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -p no:cacheprovider $$(grep -rl '@given' tests)
	$(BIN)/python tools/fuzz_csr_parse.py --logs 20000
	$(BIN)/python tools/fuzz_models.py --mutations 10000

# Every benchmarks/bench_*.py, one table (figure, baseline, ratio, goal, met), rows kept in bench-results.json.
bench: setup
	$(BIN)/python benchmarks/run_all.py --out bench-results.json

# The README's measured-speed section, from the last `make bench`.
readme-speed: bench-results.json
	$(BIN)/python tools/gen_readme_speed.py bench-results.json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
