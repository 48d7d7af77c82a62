# Transformer Explorer, CPU image. Build:  docker build -t explorer .
# Every Python package comes from requirements-lock.txt, each file checked against its sha256
# (--require-hashes, --no-deps: nothing resolved). Its torch is the CPU wheel 2.13.0+cpu, taken
# from the PyTorch CPU index (TORCH_INDEX) or from local wheels:
#   docker build --build-arg PIP_FIND_LINKS=/wheels -v /path/to/wheels:/wheels -t explorer .
# Run:  docker run -p 7860:7860 explorer   -> http://127.0.0.1:7860
#
# The base image is pinned by digest: the multi-platform index of python:3.11-slim (Python
# 3.11.15 on Debian trixie, built 2026-08-05) as Docker's official-images project records it
# (github.com/docker-library/repo-info, repos/python/remote/3.11-slim.md). No image registry is
# reachable where this file was edited, so the digest was copied from that record, not pulled.
# To move to a newer build: `docker buildx imagetools inspect python:3.11-slim`, then replace
# the digest below. A build from another base (an offline stand-in, a mirror) names it:
#   docker build --build-arg BASE_IMAGE=localhost/py-base:bookworm -t explorer .
ARG BASE_IMAGE=python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff
FROM ${BASE_IMAGE}

# pip reads PIP_FIND_LINKS from the environment; build args are in the environment of RUN.
ARG PIP_FIND_LINKS=""
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    PATH=/opt/venv/bin:$PATH

# No CJK fonts here: the Chinese UI is drawn by the visitor's browser, not by this server.
# A venv works both on python:3.11-slim and on Debian bases whose pip refuses system installs.
RUN python3 -m venv /opt/venv
COPY requirements-lock.txt /tmp/requirements/
# The lock's CPU torch from PIP_FIND_LINKS when given, else from TORCH_INDEX (tried second, so
# an offline build with local wheels never waits on an index it cannot reach).
RUN (pip install --no-deps --require-hashes -r /tmp/requirements/requirements-lock.txt \
     || pip install --no-deps --require-hashes ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"} \
            -r /tmp/requirements/requirements-lock.txt) \
 && rm -rf /tmp/requirements

# The app's code and the venv belong to root, readable and not writable by the user that runs
# the app: code running as that user cannot change what the next start runs. That user writes
# only in its home: the converted checkpoints and built kernels (EXPLORER_CACHE), Gradio's files.
RUN useradd --create-home --uid 1000 explorer
COPY . /opt/app
RUN chmod -R u=rwX,go=rX /opt/app /opt/venv
USER explorer
WORKDIR /home/explorer
ENV PYTHONPATH=/opt/app \
    EXPLORER_CACHE=/home/explorer/.cache/transformer-explorer \
    HOST=0.0.0.0 \
    PORT=7860

# Convert the GGUF checkpoints to fp32 safetensors now, so the container starts serving at once.
RUN python -m explorer.checkpoints prepare --all

EXPOSE 7860
CMD ["python", "/opt/app/app.py"]
