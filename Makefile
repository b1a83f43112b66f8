# Two commands on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test record record-flag-pairs record-history-budget lint bench clean

# The environment is rebuilt whenever pyproject.toml or a C part changes (setup.py builds the
# optional C parts, every toolkit/**/*.c and the parts they include, *.h: the readers of binary and
# proto-JSON histories, the payload-cell scanner, the lazy cells' JSON text, the OTLP writers and
# the span builders, with the machine's C compiler; without one the package does the same in numpy
# and Python).
C_PARTS := $(wildcard toolkit/*.[ch] toolkit/*/*.[ch] toolkit/*/*/*.[ch] toolkit/*/*/*/*.[ch])

$(STAMP): pyproject.toml setup.py $(C_PARTS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[lab,notebooks,dev,spark,otel]"
	touch $(STAMP)

# Records a live subset on the embedded dev server, then executes every notebook to HTML in build/.
demo: $(STAMP)
	$(PY) -m toolkit.lab.demo --out build

# Test workers (pytest-xdist): many slow tests wait on a subprocess (a notebook kernel, the JVM, the
# dev server's timers), so one more worker than the 2 cores keeps both busy. tests/conftest.py
# splits the tests into units (modules, one for Spark, the long tests alone), longest first.
WORKERS ?= 3

test: $(STAMP)
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile --no-loadscope-reorder

# Regenerates data/ from scratch: every scenario, every google-adk version, the replay matrix.
record: $(STAMP)
	$(PY) -m toolkit.lab.record --data data

# Only data/flag_pairs: one virtual environment per temporalio release (about 4 min the first time).
record-flag-pairs: $(STAMP)
	$(PY) -m toolkit.lab.record --data data --only flag_pairs

# Only data/history_budget: long agent loops on dev servers with lowered limits (about 23 min).
record-history-budget: $(STAMP)
	$(PY) -m toolkit.lab.record --data data --only history_budget

lint: $(STAMP)
	$(VENV)/bin/ruff check toolkit tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/bench_read_history.py
	$(PY) benchmarks/bench_read_logs.py
	$(PY) benchmarks/bench_datasets.py
	$(PY) benchmarks/bench_detectors.py
	$(PY) benchmarks/bench_investigate.py
	$(PY) benchmarks/bench_replay_check.py

clean:
	rm -rf build .pytest_cache
