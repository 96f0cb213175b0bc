# `make demo` and `make test` work from a clean clone: each creates .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo reads the user's EVALPACK_DATA_DIR, else the offline mirror beside the checkout, when
# it holds MATH; else the small sample the pack ships.
SHARED_DATA := $(abspath $(or $(EVALPACK_DATA_DIR),../shared/data))
DEMO_DATA := $(if $(wildcard $(SHARED_DATA)/EleutherAI__hendrycks_math),$(SHARED_DATA),$(abspath demo/data))
DEMO_OUT := demo_output
DEMO_BOARD := demo_leaderboard
DEMO_MODELS := $(if $(wildcard $(SHARED_DATA)/EleutherAI__hendrycks_math),demo/leaderboard_shared.yaml,demo/leaderboard.yaml)
# BBH (and its per-subtask heat map) needs the mirror; the shipped sample has MATH only.
comma := ,
DEMO_TASKS := $(if $(wildcard $(SHARED_DATA)/lukaemon__bbh),minerva_math_tulu$(comma)bbh_cot_v1_tulu,minerva_math_tulu)

.PHONY: demo test lint venv chromium

venv: $(BIN)/.installed

# Installs go through uv (pinned; pip fetches it like any package): it installs in parallel,
# with its own cache (the test set-up: about 70 s against pip's 110 s on the 2-core machine).
# utils/core/uv_settings.py makes it install what pip would here: it reads where this
# machine's pip looks (pip.conf, PIP_* variables) and sets pip's rules; a failure stops make.
UV_VERSION := 0.13.9
UV := $(VENV)/.uv-$(UV_VERSION)
UV_INSTALL = settings=$$($(BIN)/python -I utils/core/uv_settings.py) && eval "$$settings" \
	&& $(BIN)/uv pip install --quiet --python $(BIN)/python

$(UV):
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "uv==$(UV_VERSION)"
	touch $@

# editable_first: `import evalpack` finds the install even beside a checkout named evalpack
EDITABLE_FIRST = $(BIN)/python -I utils/core/editable_first.py

$(BIN)/.installed: pyproject.toml $(UV)
	$(UV_INSTALL) --upgrade-package pip pip -e ".[dev]"
	$(EDITABLE_FIRST)
	touch $@

demo: venv
	EVALPACK_DATA_DIR=$(DEMO_DATA) $(BIN)/evalpack --model replay \
		--model_args from_doc=solution --tasks minerva_math_tulu \
		--apply_chat_template --log_samples --output_path $(DEMO_OUT)
	EVALPACK_DATA_DIR=$(DEMO_DATA) $(BIN)/evalpack leaderboard run --models $(DEMO_MODELS) \
		--suite tulu_3_dev_core --tasks $(DEMO_TASKS) --output $(DEMO_BOARD)
	$(BIN)/evalpack report $(DEMO_BOARD) --output $(DEMO_BOARD)/report \
		--title "evalpack demo leaderboard"
	@echo "report: $(DEMO_BOARD)/report/report.html (and report.md, report.json)"

# What the tests need beyond the demo: torch (the CPU build, pinned; this machine's pip
# configuration finds the 2.13.0+cpu wheel; elsewhere set
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu) for
# the hf backend and the real OpenAI-compatible server the tests start; Ray for the cluster test.
# The pack alone first (no dependencies: seconds), so that BigCodeBench's pinned libraries can
# go into their own folder while everything else installs (two installs at once; the libraries'
# installer uses the venv's uv too); its output is shown if it fails.
# Both install without bytecode, which is then compiled as pip would, but for the packages' own
# test folders (8,000 of 39,000 files; no code imports them, and the sandbox's held runtime
# leaves them out): compiling is most of the set-up's CPU. A file that does not compile (a
# template, Python 2 code) fails neither pip nor uv, nor this. Compiling at set-up is needed:
# with PYTHONDONTWRITEBYTECODE set (as on this machine) no process writes bytecode, and the
# suite with only numpy compiled took 642 s of pytest against 442 s (imports compiled again).
COMPILE = $(BIN)/python -m compileall -qq -j0 -x '(site-packages|bigcodebench-libs)/.*/tests?/'
PURELIB = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
$(BIN)/.test-extras: pyproject.toml $(UV)
	$(UV_INSTALL) --no-deps --upgrade-package pip pip -e . || exit 1; \
	export UV_COMPILE_BYTECODE=0; \
	{ $(BIN)/python -m evalpack.hooks.bigcodebench.libs install > $(VENV)/bigcodebench-libs.log 2>&1 \
		&& { $(COMPILE) $(VENV)/bigcodebench-libs || true; }; } & \
	libs=$$!; \
	$(UV_INSTALL) "torch==2.13.0" -e ".[dev,hf,serve-test,ray,verifiers]"; \
	extras=$$?; \
	[ $$extras = 0 ] && { $(COMPILE) $(PURELIB) || true; }; \
	wait $$libs || { cat $(VENV)/bigcodebench-libs.log; exit 1; }; \
	exit $$extras
	$(EDITABLE_FIRST)
	touch $(BIN)/.installed $@

# The report test opens the HTML page in Debian's headless Chromium; without it that test skips.
chromium:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) \
		|| echo "chromium could not be installed: the browser test will skip"

# The suite runs on one pytest-xdist worker more than the cores (CI has 2): its tests wait
# (servers starting, sleeping jobs, time limits) for part of their time, which the extra worker
# fills: a fresh clone's `make test` in 455 s (pytest 410 s) against 499-501 s (446-449 s) with
# a worker per core, the same evening. Tests that must not run beside each other or share an
# expensive session fixture run on one worker (tests/conftest.py, XDIST_GROUPS). The 15
# slowest tests are printed at the end.
# The set-up and Chromium's install (a download and an unpack on a machine without it) run at once.
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target $(BIN)/.test-extras chromium
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -q -n $$(( $$(nproc) + 1 )) --durations=15

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
