# The two commands README.md promises: `make demo` (the main job) and `make test`.
PYTHON ?= python3

.PHONY: install demo test lint bench

install:
	$(PYTHON) -m pip install -q -e '.[test]'

# The main job: build the NMMB-MONARCH example (Debian gfortran + Open MPI when
# missing) and run its taskflow port; it prints where the figures, the
# animation and the model logs are.
NMMB := examples/nmmb_monarch
demo: install
	@command -v gfortran >/dev/null && command -v mpif90 >/dev/null && command -v mpirun >/dev/null \
	  || bash runtime/testbed/install.sh openmpi-bin libopenmpi-dev gfortran
	$(MAKE) -s -C $(NMMB)
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  taskflow run --progress $(NMMB)/workflow.py $(NMMB)/config/default.nml $(NMMB)/run

test: install lint
	$(PYTHON) -m pytest -q tests

# Static checks (configured in pyproject.toml): ruff everywhere, mypy on the package
# (strict on the wire, the agent and the providers' interface).
lint: install
	$(PYTHON) -m ruff check src tests benchmarks
	$(PYTHON) -m mypy

bench: install
	$(PYTHON) -m pip install -q -e '.[bench]'
	$(PYTHON) benchmarks/run.py
