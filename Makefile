# `make demo` and `make test` work from a clean clone: each creates .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SHARED_DATA := $(abspath ../shared/data)
# The demo reads the full offline mirror when it exists, else the small sample the pack ships.
DEMO_DATA := $(if $(wildcard $(SHARED_DATA)/EleutherAI__hendrycks_math),$(SHARED_DATA),$(abspath demo/data))
DEMO_OUT := demo_output

.PHONY: demo test lint venv

venv: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

demo: venv
	EVALPACK_DATA_DIR=$(DEMO_DATA) $(BIN)/evalpack --model replay \
		--model_args from_doc=solution --tasks minerva_math_tulu \
		--apply_chat_template --log_samples --output_path $(DEMO_OUT)

test: venv
	$(BIN)/ruff check .
	$(BIN)/pytest -q

lint: venv
	$(BIN)/ruff check .
