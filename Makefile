# Two commands do everything:   make demo   (train the copy task)    make test   (run the tests)
# Each creates .venv with the pinned dependencies on first use; `make test` also .venv-oldest, the oldest torch.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install bench mutate clean

$(STAMP): requirements.txt requirements-onnx.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$$(grep '^torch==' requirements.txt)"
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet -r requirements-onnx.txt || echo "no ONNX packages for this machine: the ONNX export tests will be skipped"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/nnrnn kernels  # compiles the C++ recurrence loops now rather than on first use
	touch $(STAMP)

install: $(STAMP)

# The oldest torch nnrnn supports, in an environment of its own, for the short suite `make test` runs second
OLDEST := .venv-oldest
OLDEST_STAMP := $(OLDEST)/.installed
# the library under the oldest torch: layers and cells of every model, parametrizations, the fused loops, training
OLDEST_TESTS := tests/parametrizations tests/models/test_fused.py tests/models/test_stepcells.py \
	tests/test_package.py tests/training/test_train.py::test_run_folder_contents \
	tests/training/test_train.py::test_resume_after_interruption_is_exact

$(OLDEST_STAMP): requirements-oldest.txt pyproject.toml
	test -x $(OLDEST)/bin/python || $(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python -m pip install --quiet -r requirements-oldest.txt
	$(OLDEST)/bin/python -m pip install --quiet --no-deps -e .
	touch $(OLDEST_STAMP)

REACH := echo "The nnrnn command is $(BIN)/nnrnn; or, to type plain nnrnn: source $(BIN)/activate"

demo: $(STAMP)  # a new folder each time, so that running it again deletes nothing
	$(BIN)/nnrnn train copy --model nnrnn --preset paper --steps 2000 --out runs/demo-copy-$$(date +%Y%m%d-%H%M%S)
	@$(REACH)

# two worker processes of one thread each: the suite's time halves on 2 cores; a worker that runs out of tests takes
# the other's (worksteal), so that no long test starts last on a busy one (docs/testing.md)
test: $(STAMP) $(OLDEST_STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist worksteal --durations=15
	# the compiled loops need a newer torch's CPU BLAS (brgemm): under the oldest the Python loops run
	NNRNN_CPP=0 OMP_NUM_THREADS=1 $(OLDEST)/bin/python -m pytest -n 2 -m "not slow" $(OLDEST_TESTS)
	@$(REACH)

# whole updates against torch.nn.RNN, then the same sizes against their floor (the products they cannot avoid),
# the scans against their loops, and one step at a time
bench: $(STAMP)
	$(BIN)/python benchmarks/training_update.py --sizes memory,copy,medium,psmnist,large --repeats 5 --budget 600
	$(BIN)/python benchmarks/speed_floor.py --sizes copy,medium
	$(BIN)/python benchmarks/scan_speed.py  # the parallel scans against their loops (docs/performance.md)
	$(BIN)/python benchmarks/stepping.py  # one step at a time (generation) against torch.nn.RNN

# mutation testing of the training procedure: slow (hours on 2 cores), not part of CI.
# MUTANTS="nnrnn.training.checkpoint* nnrnn.tasks.ptb*" runs only the mutants of those functions (mutmut's names).
MUTANTS ?=
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-mutate.txt
	# mutmut runs the tests from mutants/: tell them where the shared data is
	NNRNN_SHARED_DATA=$${NNRNN_SHARED_DATA:-$(abspath ../shared/data)} $(BIN)/mutmut run --max-children 2 $(foreach m,$(MUTANTS),'$(m)') || true
	$(BIN)/python tools/mutation_report.py

clean:
	rm -rf $(VENV) $(OLDEST) runs build *.egg-info mutants
