# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export TZ := UTC

.PHONY: demo test test-zones bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

# The user-log, journal, pool and tracking suites again under zones with DST (one hour, half an hour)
# and a fixed non-whole-hour offset; tests whose answers were recorded in UTC pin it.
ZONES := America/New_York Australia/Lord_Howe Asia/Kolkata
test-zones: $(STAMP)
	for zone in $(ZONES); do \
	  JOBLEDGER_TEST_TZ=$$zone $(BIN)/python -m pytest -n 2 -q tests/userlog tests/journal tests/pool tests/tracking || exit 1; \
	done

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
