# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export TZ := UTC

.PHONY: demo test test-zones bench venv clean upstream-tests

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

# HTCondor's own test files (src/condor_tests) against jobledger, from a checkout of
# htcondor/htcondor kept outside this repository; writes tests/upstream/PASSLIST.md.
upstream-tests: $(STAMP)
	@if [ -z "$(HTCONDOR_SRC)" ]; then echo "upstream-tests: skipped (no HTCONDOR_SRC=path/to/htcondor checkout given)"; \
	else $(BIN)/python -m tests.upstream.run "$(HTCONDOR_SRC)" $(UPSTREAM_FILES); fi

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
