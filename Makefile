# Two targets do all set-up: `make demo` (the story on the bundled dumps/, core dependencies only) and `make test`
# (the suite, every optional feature). `make wheel` checks what users install: tools/check_wheel.py.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FORENSICS := $(BIN)/forensics

.PHONY: setup demo shell test wheel fuzz bench readme-speed clean

setup: $(VENV)/.installed

# Each step says what it does before it starts, and pip shows what it downloads. The demo needs the core only
# (numpy, rich, flatbuffers, isal: $(VENV)/.core); the suite needs every optional feature and the test tools
# ($(VENV)/.installed, a few minutes the first time).
$(VENV)/.created:
	@echo "make: creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: upgrading pip in $(VENV)"
	$(BIN)/python -m pip install --upgrade pip
	@touch $@

$(VENV)/.core: pyproject.toml $(VENV)/.created
	@echo "make: installing forensics with its core dependencies only (what the demo uses)"
	$(BIN)/python -m pip install -e .
	@touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.core
	@echo "make: installing forensics with every optional feature and the test tools (a few minutes the first time)"
	$(BIN)/python -m pip install -e '.[all,test]'
	@touch $@
	@echo "make: $(VENV) is ready"

demo: $(VENV)/.core
	@echo "make: running the story on the bundled dumps/ (forensics demo --dumps dumps)"
	@$(FORENSICS) demo --dumps dumps
	@printf '\n%s\n' "Next: put forensics on your PATH in this shell, then try any command of README.md and docs/:"
	@printf '    %s\n' "source $(VENV)/bin/activate      (Windows: $(VENV)\Scripts\activate)" "forensics --help"
	@echo "or type 'make shell' for a new shell with $(VENV) active ('make setup' adds every optional feature)."

# A new interactive shell with the venv active (forensics on PATH); `exit` comes back.
shell: $(VENV)/.core
	@echo "make: a shell with $(VENV) active; type exit to leave it"
	@VIRTUAL_ENV="$(abspath $(VENV))" PATH="$(abspath $(BIN)):$$PATH" $${SHELL:-/bin/sh}

test: setup
	$(BIN)/python -m pytest

# The sdist and the wheel built, the wheel installed into a fresh venv outside the clone, and the demo, a smoke set
# and the notebook run there (CI runs it after `make test`).
wheel: setup
	$(BIN)/python tools/check_wheel.py

# Exploration beyond the suite's fixed examples, not part of `make test`: the property tests with random seeds
# (FORENSICS_HYPOTHESIS_PROFILE=fuzz), 20,000 generated register logs against the per-line parser, and 10,000
# mutated models through graph / extract / relayout / decode / link with no escape allowed. FORENSICS_FUZZ_MODELS=DIR
# adds a directory of real .tflite models to the mutated ones. A failure prints its seed; save it as an @example.
fuzz: setup
	FORENSICS_HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -p no:cacheprovider $$(grep -rl '@given' tests)
	$(BIN)/python tools/fuzz_csr_parse.py --logs 20000
	$(BIN)/python tools/fuzz_models.py --mutations 10000

# Every benchmarks/bench_*.py, one table (figure, baseline, ratio, goal, met), rows kept in bench-results.json.
bench: setup
	$(BIN)/python benchmarks/run_all.py --out bench-results.json

# docs/speed.md's measured section, from the last `make bench`.
readme-speed: bench-results.json
	$(BIN)/python tools/gen_readme_speed.py bench-results.json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist *.egg-info
