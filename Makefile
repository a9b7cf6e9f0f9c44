# The two set-up commands of the README:
#   make demo   the main job on the bundled default data
#   make test   the tests but the slow ones (CI runs them, then make test-slow, through .ci/run)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-slow test-kernels lint typecheck bench docs vsix

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# DEMO_ARGS: options of `adl demo` (e.g. --wheel FILE, --max-sentences N, --set KEY=VALUE)
demo: $(STAMP)
	$(BIN)/adl demo $(DEMO_ARGS)

# the tests, less the slow ones (under 10 minutes on 2 cores); CI runs both
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# the training-outcome tests again under another CPU kernel set than the machine's best
# (KERNELS=default|avx2|avx512): their margins must not depend on floating-point rounding
KERNELS ?= default
test-kernels: $(STAMP)
	ATEN_CPU_CAPABILITY=$(KERNELS) $(BIN)/python -m pytest -q -m training

# ruff (lint and format) over the whole tree; lint-imports: the layers of pyproject.toml
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# mypy over the whole package (the runtime and the grammar live inside adl/)
typecheck: $(STAMP)
	$(BIN)/mypy -p adl

bench: $(STAMP)
	$(BIN)/python bench/parse_check.py

docs: $(STAMP)
	$(BIN)/python -m adl.docgen docs/language.md

# the VS Code extension, editors/vscode/adl-0.1.0.vsix (docs/editors.md): npm installs its
# language client, vsce packages it (vsce 3.x runs on Node 20 and later)
VSCE ?= @vscode/vsce@3
vsix:
	cd editors/vscode && npm install --no-audit --no-fund && \
	  npx --yes $(VSCE) package --skip-license --allow-missing-repository
