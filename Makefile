# Two entry points; each builds its own virtual environment from nothing.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/dmargin-ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

demo: $(BIN)/dmargin-ready
	$(BIN)/python -m dmargin.demo

test: $(BIN)/dmargin-ready
	$(BIN)/python -m pytest

bench: $(BIN)/dmargin-ready
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/bench_relief_speed.py
	$(BIN)/python benchmarks/bench_irelief_accuracy.py

clean:
	rm -rf $(VENV)
