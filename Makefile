# The two commands README.md promises: `make demo` (the main job) and `make test`.
#
# Both work in a virtual environment of their own (.venv, made with $(PYTHON)), so
# they run on a Debian or Ubuntu machine whose system Python refuses `pip install`
# (PEP 668) as well as with any user-installed Python >= 3.10. Where the venv module
# is missing (Debian's python3-venv), it is installed as gfortran is.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: venv demo test lint bench docs pictures

venv: $(PY)

$(PY):
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null \
	  || bash testbed/install.sh python3-venv
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The main job: build the NMMB-MONARCH example (Debian gfortran + Open MPI when
# missing) and run its taskflow port; it prints where the figures, the
# animation and the model logs are. Installs only what the demo needs.
NMMB := examples/nmmb_monarch
demo: venv
	$(PY) -m pip install -q -e '.[examples]'
	@command -v gfortran >/dev/null && command -v mpif90 >/dev/null && command -v mpirun >/dev/null \
	  || bash testbed/install.sh openmpi-bin libopenmpi-dev gfortran
	$(MAKE) -s -C $(NMMB)
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  $(VENV)/bin/taskflow run --progress $(NMMB)/workflow.py $(NMMB)/config/default.nml $(NMMB)/run

test: lint
	$(PY) -m pytest -q tests

# Static checks (configured in pyproject.toml): ruff everywhere, mypy on the package
# (strict on the wire, the agent and the providers' interface).
lint: venv
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy

bench: venv
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/run.py

# The documentation site (mkdocs.yml, docs/) into site/; `$(VENV)/bin/mkdocs serve` serves it live.
docs: venv
	$(PY) -m pip install -q -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The documentation's pictures (docs/images/*.png: the monitor, the report, the graph, the
# Gantt chart, the example notebook), taken from a real run by the test that checks them; commit what changed.
pictures: venv
	$(PY) -m pip install -q -e '.[test]'
	TASKFLOW_UPDATE_PICTURES=1 $(PY) -m pytest -q tests/surfaces/test_doc_pictures.py tests/surfaces/test_notebook.py
