# Two commands do everything on a fresh machine with only Python 3.11+:
#   make lab    set up .venv and open the workbook in JupyterLab (prebuilt wheels only; no compiler needed)
#   make test   set up .venv with everything and run every test (package, notebooks, browser, local model)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LAB_STAMP := $(VENV)/.lab-installed
STAMP := $(VENV)/.installed
# llama-cpp-python compiles llama.cpp on first install; keep the build portable across CPUs.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: lab local local-server model-server test bench bench-verify bench-setup mutation lint catalog clean

# A learner's install: the package, JupyterLab, the widgets and the openai client. Only
# prebuilt wheels, so no compiler is needed; no test tools. The pip that comes with the
# venv is new enough, and not upgrading it saves a few seconds of the first minute.
# --no-compile: pip would byte-compile every installed module (about 20 s of the first minute
# on 2 cores); Python compiles what it imports on first use instead, which costs the first
# JupyterLab start about 2 s. No check for a newer pip either: one request less.
$(LAB_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile --disable-pip-version-check -e ".[lab]"
	touch $@

# Everything: the lab, the local engine (built now, or waited for when `make lab` is
# building it in the background), and the test tools. Fails when the engine cannot be built.
$(STAMP): $(LAB_STAMP)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python scripts/local_engine.py build
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

# JupyterLab refuses to run as root (containers, classroom VMs) unless told it may.
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

# The local model's engine builds in the background (log: .venv/codeagent-lite-engine/build.log);
# notebook 06 shows its state. The lab opens at once either way.
# The learners read Chinese, so the Chinese edition opens first; `make lab EDITION=en` opens the English one.
# Each edition's first page links the other.
# JupyterLab's own menus follow the edition (its zh-CN language pack comes with the lab extra): its display language
# is a user setting, written here into the workbook's own settings folder inside .venv, so the learner's ~/.jupyter
# is never touched; the other settings kept there (a theme) survive a change of edition.
EDITION ?= zh
LAB_SETTINGS := $(abspath $(VENV))/lab-settings
lab: $(LAB_STAMP)
	@$(BIN)/python -m codeagent_lite.workbook.lab_language $(EDITION) "$(LAB_SETTINGS)"
	@$(BIN)/python scripts/local_engine.py start
	JUPYTERLAB_SETTINGS_DIR="$(LAB_SETTINGS)" $(BIN)/jupyter lab $(ROOT_FLAG) $(LAB_ARGS) notebooks/$(EDITION)/00_start_here.ipynb

# Build the local engine in the foreground, with progress (also the way to retry a failed build).
local: $(LAB_STAMP)
	$(BIN)/python scripts/local_engine.py build

# llama.cpp's own llama-server (parallel slots, continuous batching, prompt cache): a second CMake
# build of the same llama.cpp, ~16 min at low priority on 2 busy cores, cached in
# ~/.cache/codeagent-lite by its flags. Optional; where it is built, the model server uses it.
local-server: $(LAB_STAMP)
	$(BIN)/python scripts/local_engine.py build-server

# One model server for the machine (what the classroom runs as a JupyterHub service):
# llama.cpp's llama-server where `make local-server` built it, else llama-cpp-python's own server;
# `make model-server PARALLEL=8` gives llama-server 8 slots (BACKEND=llama-cpp-python: the other).
MODEL_PORT ?= 8765
PARALLEL ?= 1
BACKEND ?= auto
model-server: $(LAB_STAMP)
	$(BIN)/python -m codeagent_lite.providers.local_server --host 127.0.0.1 --port $(MODEL_PORT) \
		--parallel $(PARALLEL) --backend $(BACKEND)

test: $(STAMP)
	$(BIN)/python scripts/ensure_browser.py
	$(BIN)/python scripts/ensure_sandbox.py
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_parser.py

# verify on the solutions, all steps, against the commit before the sandbox (a git worktree), same run.
bench-verify: $(STAMP)
	$(BIN)/python benchmarks/bench_verify.py

# Fresh clone to live lab with an empty pip cache, with and without a compiler (needs PyPI; ~15 min).
bench-setup:
	$(PYTHON) benchmarks/bench_setup.py

# Mutation testing of the chapter's modules ([tool.mutmut] in pyproject.toml). Slow (tens of
# minutes on two cores), so it is not part of `make test`. One module at a time:
#   make mutation MUTANTS='codeagent_lite.strict_json*'
# mutmut mutates function bodies only; benchmarks/mutate_tables.py mutates the module-level tables.
MUTANTS ?=
mutation: $(STAMP)
	$(BIN)/mutmut run --max-children 2 $(MUTANTS)
	$(BIN)/mutmut results
	$(BIN)/python benchmarks/mutate_tables.py

# The message catalog (codeagent_lite/locale): extract the English ids from the code (Babel, babel.cfg), merge them
# into the zh and en .po files (a new id arrives untranslated, never guessed: --no-fuzzy-matching; ids the code no
# longer says are dropped), give new English entries their id, and compile the .mo files gettext reads. flit_core has
# no build hook, so the .mo files are committed; tests/test_catalog.py fails when they are stale or a zh entry is empty.
# Needs only Babel (the test extra); run it after changing any learner-facing words, then translate and run it again.
LOCALE := codeagent_lite/locale
catalog:
	$(BIN)/pybabel -q extract -F babel.cfg -k _p:1c,2 --add-location=file --no-wrap --sort-output \
		--project=codeagent-lite --version=0.1.0 --copyright-holder="codeagent-lite contributors" \
		-o $(LOCALE)/codeagent_lite.pot .
	for language in zh en; do \
		$(BIN)/pybabel -q update -D codeagent_lite -i $(LOCALE)/codeagent_lite.pot -d $(LOCALE) -l $$language \
			--init-missing --no-fuzzy-matching --ignore-obsolete --no-wrap || exit 1; \
	done
	$(BIN)/python scripts/catalog_english.py
	$(BIN)/pybabel compile -D codeagent_lite -d $(LOCALE) --statistics

lint: $(STAMP)
	$(BIN)/ruff check codeagent_lite tests benchmarks scripts
	$(BIN)/mypy

# Everything the set-up and the tests create, the classroom's npm proxy included.
clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants classroom/node_modules

# --- classroom (issues 10, 19): JupyterHub's proxy from npm, the class's environment, the hub, its benchmark ---
# `make test` needs the proxy too (tests/classroom starts a real hub), hence the extra prerequisite of test.
# `make classroom` needs no compiler and no test tools: the hub's side is the lab install plus the classroom extra;
# the students' side is a shared read-only venv in $(CLASS_ENV) (classroom/class_env.py, root only). The teacher's
# guide is classroom/README.md.
PROXY_STAMP := classroom/node_modules/.installed
HUB_STAMP := $(VENV)/.classroom-installed
CLASS_ENV ?= /opt/codeagent-lite-class
STUDENTS ?= 3
CLASS_LIST ?=
.PHONY: classroom classroom-proxy classroom-env bench-classroom
test: $(PROXY_STAMP)

$(PROXY_STAMP): classroom/package.json classroom/package-lock.json
	cd classroom && npm ci --no-audit --no-fund --loglevel=error
	touch $(PROXY_STAMP)

classroom-proxy: $(PROXY_STAMP)

$(HUB_STAMP): $(LAB_STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet --no-compile --disable-pip-version-check -e ".[classroom]"
	touch $@

classroom-env: $(HUB_STAMP)
	$(if $(ROOT_FLAG),$(BIN)/python classroom/class_env.py --prefix $(CLASS_ENV),@echo "not root: no students' environment (the hub explains)")

# As root: a class (one Unix account per student). Not as root: the hub says how to start it, or
# CAL_HUB_REHEARSAL=1 make classroom for a one-person rehearsal that isolates nobody.
classroom: $(HUB_STAMP) $(PROXY_STAMP) classroom-env
	CAL_HUB_STUDENTS=$(STUDENTS) CAL_HUB_CLASS_LIST=$(CLASS_LIST) CAL_HUB_EDITION=$(EDITION) CAL_CLASS_ENV=$(CLASS_ENV) \
		$(BIN)/jupyterhub -f classroom/jupyterhub_config.py

bench-classroom: $(STAMP) $(PROXY_STAMP)
	$(BIN)/python benchmarks/bench_classroom.py

# make lint also holds the classroom's Python to ruff and mypy --strict.
.PHONY: lint-classroom
lint: lint-classroom
lint-classroom: $(STAMP)
	$(BIN)/ruff check classroom
	$(BIN)/ruff format --check classroom
	MYPYPATH=classroom $(BIN)/mypy --strict classroom/hub_client.py classroom/accounts.py classroom/class_env.py \
		classroom/class_spawner.py classroom/class_model.py classroom/outside_grade.py classroom/outside_judge.py \
		classroom/outside_child.py classroom/reply_cache.py classroom/checked_collect.py benchmarks/bench_classroom.py
# --- end classroom ---
