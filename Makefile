# The two commands README.md promises: `make demo` (the main job) and `make test`.
PYTHON ?= python3

.PHONY: install demo test bench

install:
	$(PYTHON) -m pip install -q -e '.[test]'

demo: install
	taskflow run examples/quickstart/pipeline.py 200

test: install
	$(PYTHON) -m pytest -q tests

bench: install
	$(PYTHON) -m pip install -q -e '.[bench]'
	$(PYTHON) benchmarks/run.py
