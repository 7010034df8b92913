# Two commands do everything on a fresh machine with only Python 3.11+:
#   make lab    set up .venv and open the workbook in JupyterLab
#   make test   set up .venv and run every test (package, notebooks, browser, local model)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python compiles llama.cpp on first install; keep the build portable across CPUs.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: lab test bench mutation lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# JupyterLab refuses to run as root (containers, classroom VMs) unless told it may.
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) $(LAB_ARGS) notebooks/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python scripts/ensure_browser.py
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_parser.py

# Mutation testing of the chapter's modules ([tool.mutmut] in pyproject.toml). Slow (tens of
# minutes on two cores), so it is not part of `make test`. One module at a time:
#   make mutation MUTANTS='codeagent_lite.strict_json*'
MUTANTS ?=
mutation: $(STAMP)
	$(BIN)/mutmut run --max-children 2 $(MUTANTS)
	$(BIN)/mutmut results

lint: $(STAMP)
	$(BIN)/ruff check codeagent_lite tests benchmarks scripts
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants
