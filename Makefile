# Each entry point builds its own virtual environment (.venv) from nothing, once per change of pyproject.toml.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
BENCHMARKS = $(sort $(wildcard benchmarks/bench_*.py))

.PHONY: demo test lint docs bench bench-full clean

$(BIN)/dmargin-ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

# The peers the benchmarks compare with (skrebate, fast-select, ...).
$(BIN)/bench-ready: $(BIN)/dmargin-ready
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	touch $@

# Sphinx, numpydoc, MyST, the theme, sphinx-gallery and matplotlib (the docs extra).
$(BIN)/docs-ready: $(BIN)/dmargin-ready
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $@

demo: $(BIN)/dmargin-ready
	$(BIN)/python -m dmargin.demo

test: $(BIN)/dmargin-ready
	$(BIN)/python -m pytest

# ruff (pinned in the test extra): the lint rules and the layout of pyproject.toml's [tool.ruff].
lint: $(BIN)/dmargin-ready
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The documentation site in docs/_build/html; any warning fails the build.
docs: $(BIN)/docs-ready
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

# Every benchmark in its --quick mode (small sizes, one repeat; results in
# benchmarks/results/quick/, not committed); a failed script does not stop the others.
# A script whose data is not there exits with 77 after one line saying where the data
# comes from (benchmarks/README.md, "Data"): reported as skipped, not failed.
bench: $(BIN)/bench-ready
	@start=$$(date +%s); failed=""; skipped=""; \
	for script in $(BENCHMARKS); do \
		echo "== $$script --quick"; \
		$(BIN)/python $$script --quick; status=$$?; \
		if [ $$status -eq 77 ]; then skipped="$$skipped $$script"; \
		elif [ $$status -ne 0 ]; then failed="$$failed $$script"; fi; \
	done; \
	echo "make bench: $$(( $$(date +%s) - start )) s"; \
	if [ -n "$$skipped" ]; then echo "skipped (no data):$$skipped"; fi; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

# The full runs (hours); they rewrite benchmarks/results/*.json and the tables
# of benchmarks/README.md and of the docs' pages.
bench-full: $(BIN)/bench-ready
	@failed=""; skipped=""; \
	for script in $(BENCHMARKS); do \
		echo "== $$script"; \
		$(BIN)/python $$script; status=$$?; \
		if [ $$status -eq 77 ]; then skipped="$$skipped $$script"; \
		elif [ $$status -ne 0 ]; then failed="$$failed $$script"; fi; \
	done; \
	$(BIN)/python benchmarks/report.py; \
	if [ -n "$$skipped" ]; then echo "skipped (no data):$$skipped"; fi; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

clean:
	rm -rf $(VENV) docs/_build docs/generated docs/auto_examples
