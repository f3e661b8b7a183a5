# The two commands of the README: `make demo` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-deps lint bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/twinsched demo

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	.ci/mypy $(BIN)/mypy  # its cache kept outside the clone (.ci/mypy)
	$(BIN)/lint-imports
	$(BIN)/actionlint .github/workflows/ci.yml

test-deps:
	.ci/test-deps

# Tests marked `timing` assert wall-clock budgets: they run after the parallel phase, alone.
# Without PYTHONDONTWRITEBYTECODE (set in some shells and CI images): with it every pytest
# process and every command a test starts compiles src/ and rewrites the tests' assertions
# anew, nothing cached in __pycache__ (collecting the suite: 14.6 s of CPU instead of 7.6 s).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
test: test-deps lint
	$(PYTEST) -q -n 2 --dist loadfile -m "not timing"
	$(PYTEST) -q -m timing

bench: $(VENV)/.installed
	$(BIN)/python bench/fillup.py
	$(BIN)/python bench/decisions.py
