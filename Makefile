# DocLens: `make run` starts the app on http://127.0.0.1:7860, `make test` lints and runs every test,
# `make lint` only lints (ruff check, ruff format --check, mypy), `make format` formats the tree.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo)
APT_UPDATED := $(VENV)/.apt-updated

.PHONY: run test lint ruff format system-test-deps clean

run: $(VENV)/.runtime
	$(BIN)/python main.py serve

# ruff first: a new warning fails the build before the tests run (settings: pyproject.toml). The test files
# run on two workers, each file whole on one (its module fixtures shared); a third worker was no faster
# (33.2 against 33.5 minutes on a clean clone): the browsers, servers and subprocesses the tests start keep
# both cores busy. mypy (a minute of one core from cold) runs beside them; either failing fails the build.
TEST_WORKERS ?= 2
test: ruff system-test-deps
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & typing=$$!; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile; tests=$$?; \
	wait $$typing; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

lint: ruff
	$(BIN)/mypy

ruff: $(VENV)/.dev
	$(BIN)/ruff check
	$(BIN)/ruff format --check

format: $(VENV)/.dev
	$(BIN)/ruff check --fix
	$(BIN)/ruff format

# Debian's python3 needs python3-venv for `-m venv`; install it only when missing.
$(BIN)/python:
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c "import ensurepip" 2>/dev/null || \
		($(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt requirements-nodeps.txt | $(BIN)/python
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install --no-deps -r requirements-nodeps.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(BIN)/pip install -r requirements-dev.txt
	touch $@

# Browser tests drive Debian's chromium (Playwright cannot download its own browser here);
# CJK fonts make Chinese pages and figures render in screenshots.
system-test-deps:
	@if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/truetype/wqy ]; then \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y chromium fonts-wqy-microhei; fi

clean:
	rm -rf $(VENV) .cache test-artifacts .pytest_cache
