# One command to serve, one to test. Both create .venv, install what is missing and convert
# the embedded checkpoints once; run again, they skip what is already done.
#   make serve    -> http://127.0.0.1:7860
#   make test     -> the whole test suite (unit, parity, app API, browser)
#   make test-fast -> the inner loop: tests/unit but its slow tests (pytest.ini); it needs no
#                     checkpoint, so it converts none
#   make test-shuffled -> the whole suite in a random order (its seed is printed)
# Extra pytest arguments go in PYTEST_ARGS, e.g. make test-fast PYTEST_ARGS="--random-order"
# (shuffled; --random-order-seed=<seed> repeats an order) or PYTEST_ARGS="-k rope".
# A local wheel folder (e.g. a CPU torch wheel) is used with PIP_FIND_LINKS=/path/to/wheels.
# The app's packages come from requirements-lock.txt, hash-checked (see $(VENV)/.installed); the
# dev tools from requirements-lock-dev.txt (hash-checked) and requirements-dev.txt (by version).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
PYTEST_ARGS ?=
FAST_TIER := not slow and not checkpoint and not server and not browser
export GRADIO_ANALYTICS_ENABLED := False

.PHONY: serve test test-fast test-shuffled setup setup-dev checkpoints clean-venv

serve: setup checkpoints
	$(PY) app.py

test: setup-dev checkpoints
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: setup-dev
	$(PY) -m pytest -m "$(FAST_TIER)" $(PYTEST_ARGS)

test-shuffled: setup-dev checkpoints
	$(PY) -m pytest --random-order $(PYTEST_ARGS)

setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

$(PY):
	$(PYTHON) -m venv $(VENV)

# Installs exactly requirements-lock.txt: every file checked against its sha256, nothing
# resolved. Its torch is the CPU wheel 2.13.0+cpu: first looked for where pip already looks
# (PyPI and PIP_FIND_LINKS, a local wheel folder), and only if that fails on TORCH_INDEX, so a
# machine that cannot reach that index never waits on it (pip retries an unreachable index
# for minutes per package). On a CUDA host, install CUDA torch 2.13.0 into .venv first and run
# `make serve TORCH=installed`: the lock is used without its torch entry. Stamp files:
# reinstall only when the lock changes.
TORCH ?= cpu
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
$(VENV)/.installed: requirements-lock.txt | $(PY)
ifeq ($(TORCH),installed)
	sed '/^torch==/,/--hash/d' requirements-lock.txt > $(VENV)/lock.txt
else
	cp requirements-lock.txt $(VENV)/lock.txt
endif
	$(PIP) install --no-deps --require-hashes -r $(VENV)/lock.txt \
	  || $(PIP) install --no-deps --require-hashes --extra-index-url $(TORCH_INDEX) -r $(VENV)/lock.txt
	touch $@

# The dev tools: requirements-lock-dev.txt (bench.precision's llama.cpp, hash-checked like the
# app's lock), then the test runners and browser driver of requirements-dev.txt by version.
$(VENV)/.installed-dev: $(VENV)/.installed requirements-lock-dev.txt requirements-dev.txt
	$(PIP) install --no-deps --require-hashes -r requirements-lock-dev.txt
	$(PIP) install -r requirements-dev.txt
	touch $@

# Converts GGUF -> fp32 safetensors into $$EXPLORER_CACHE (default ~/.cache/transformer-explorer)
# the first time; afterwards it only checks the completion markers.
checkpoints: setup
	$(PY) -m explorer.checkpoints prepare --all

clean-venv:
	rm -rf $(VENV)
