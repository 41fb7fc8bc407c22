# Two targets do all set-up: `make demo` (the story on the bundled dumps/) and `make test` (the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FORENSICS := $(BIN)/forensics

.PHONY: setup demo shell test bench readme-speed clean

setup: $(VENV)/.installed

# Each step says what it does before it starts, and pip shows what it downloads: the first install takes minutes.
$(VENV)/.installed: pyproject.toml
	@echo "make: creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: upgrading pip in $(VENV)"
	$(BIN)/python -m pip install --upgrade pip
	@echo "make: installing forensics with every optional feature and the test tools (a few minutes the first time)"
	$(BIN)/python -m pip install -e '.[all,test]'
	@touch $@
	@echo "make: $(VENV) is ready"

demo: setup
	@echo "make: running the story on the bundled dumps/ (forensics demo)"
	@$(FORENSICS) demo
	@printf '\n%s\n' "Next: put forensics on your PATH in this shell, then try any command of README.md and docs/:"
	@printf '    %s\n' "source $(VENV)/bin/activate      (Windows: $(VENV)\Scripts\activate)" "forensics --help"
	@echo "or type 'make shell' for a new shell with $(VENV) active."

# A new interactive shell with the venv active (forensics on PATH); `exit` comes back.
shell: setup
	@echo "make: a shell with $(VENV) active; type exit to leave it"
	@VIRTUAL_ENV="$(abspath $(VENV))" PATH="$(abspath $(BIN)):$$PATH" $${SHELL:-/bin/sh}

test: setup
	$(BIN)/python -m pytest

# Every benchmarks/bench_*.py, one table (figure, baseline, ratio, goal, met), rows kept in bench-results.json.
bench: setup
	$(BIN)/python benchmarks/run_all.py --out bench-results.json

# docs/speed.md's measured section, from the last `make bench`.
readme-speed: bench-results.json
	$(BIN)/python tools/gen_readme_speed.py bench-results.json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
