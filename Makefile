# Two commands do everything:   make demo   (train the copy task)    make test   (run the tests)
# Each creates .venv with the pinned dependencies on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install bench clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$$(grep '^torch==' requirements.txt)"
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/nnrnn kernels  # compiles the C++ recurrence loops now rather than on first use
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	rm -rf runs/demo-copy  # the demo's own scratch folder, so the demo can be run again
	$(BIN)/nnrnn train copy --model nnrnn --preset paper --steps 2000 --out runs/demo-copy

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/training_update.py

clean:
	rm -rf $(VENV) runs build *.egg-info
