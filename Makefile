# eaglewire developer commands. Every target creates the virtual environment on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.eaglewire-installed
export OMP_NUM_THREADS ?= 2

.PHONY: demo test test-all bench lint zoo zoo-models env clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned: a CPU build that pip takes from local disk (an open range pulls a CUDA build).
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,oracle]"
	# The speculators library is the test oracle; its declared deps (torchvision, ...) do not import here.
	$(PY) -m pip install --quiet --no-deps speculators==0.9.0 hs-connectors==0.9.0
	touch $(STAMP)

env: $(STAMP)

demo: $(STAMP)
	$(PY) -m eaglewire.cli.demo

test: $(STAMP)
	$(PY) -m pytest

test-all: $(STAMP)
	$(PY) -m pytest -m ""

bench: $(STAMP)
	$(PY) -m eaglewire.cli bench-all --out bench-results

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/ruff format --check src tests

# The zoo: target (85 min), tiny DeepSeek-V3 and assistant (10 min), then both drafters side by side (1 thread each).
zoo: zoo-models
	$(MAKE) -j2 zoo-drafter-default zoo-drafter-custom-taps

zoo-models: $(STAMP)
	$(PY) -m eaglewire.cli zoo build --stage target --stage deepseek --stage assistant

zoo-drafter-%: $(STAMP)
	$(PY) -m eaglewire.cli zoo build --stage drafters --drafter $*

clean:
	rm -rf $(VENV) .pytest_cache bench-results demo-report

# The GPU check (scripts/gpu-check.sh): CUDA vs CPU on every command that runs a model; `make gpu-check-dry` runs
# it with the CPU on both sides (make test does too, through tests/test_gpu_check.py).
.PHONY: gpu-check gpu-check-dry
gpu-check: $(STAMP)
	PYTHON=$(PY) scripts/gpu-check.sh

gpu-check-dry: $(STAMP)
	PYTHON=$(PY) scripts/gpu-check.sh --dry-run
