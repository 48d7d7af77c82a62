#!/usr/bin/env bash
# Builds the Dockerfile for real with podman (no Docker engine, no image registry) and asks the
# built image's app for a generation through gradio_client. Run as root on a Debian host:
#     bash bench/container_check.sh            # prints one RESULT line at the end
# Steps (a recipe for machines whose registries are unreachable and whose cgroups are off):
#   1. a Debian bookworm minbase made by debootstrap, imported as the stand-in for
#      python:3.11-slim (passed as the Dockerfile's BASE_IMAGE: its default is pinned by a
#      digest that only a registry can serve);
#   2. `podman build --isolation=chroot` of a clean `git archive HEAD` of this repo, with
#      PIP_FIND_LINKS pointing at a mounted folder of local wheels (WHEELS, default /opt/wheels:
#      the CPU torch wheel; a plain torch pin would pull the multi-GB CUDA build);
#   3. `podman run` needs cgroups, so the image is exported and its CMD run in a chroot (with
#      /proc, /dev and /tmp bound) as the image's user;
#   4. the host's .venv asks it for one /generate through gradio_client (bench/ask_generation.py,
#      the step bench/space_check.sh ends with too), then the app's warm-up of every section's
#      default answer is watched for WARM_S seconds (default 420): none may fail but those
#      named in WARM_MAY_FAIL (default moe.pref: its held-out text is two files of Python's
#      standard library, tkinter/ttk.py and turtledemo/lindenmayer.py, which Debian's python3
#      of the stand-in base lacks and python:3.11-slim, built from CPython's sources, has).
# Measured on the way (a failure ends the check): the image's size against IMAGE_BUDGET_GB
# (default 4.5 GB: the image's size, docs/DEPLOY.md "The image", plus room for a little growth)
# with each layer's size (podman history); no GGUF file left in the image; and the precision the
# decode steps read in it, each embedded model's own default (gguf) where this CPU has its SIMD
# path, which needs the image's g++ (the kernels are built in it, as its user).
# Reused between runs: the base image (delete it with `podman rmi localhost/py-base:bookworm`);
# SKIP_BUILD=1 reuses the last built image (localhost/explorer:check) and only runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
WHEELS=${WHEELS:-/opt/wheels}
PORT=${PORT:-7871}
WORK=${WORK:-/var/tmp/explorer-container}
IMAGE_BUDGET_GB=${IMAGE_BUDGET_GB:-4.5}
PY=${PY:-$REPO/.venv/bin/python}
started=$(date +%s)
log() { echo "[container $(( $(date +%s) - started ))s] $*"; }

command -v podman >/dev/null && command -v debootstrap >/dev/null \
  || DEBIAN_FRONTEND=noninteractive apt-get install -y podman debootstrap >/dev/null
mkdir -p "$WORK"

if ! podman image exists localhost/py-base:bookworm; then
  MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources | head -1)
  ROOTFS=$(mktemp -d "$WORK/rootfs.XXXX")
  log "debootstrap bookworm minbase from $MIRROR"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
      bookworm "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1
  tar -C "$ROOTFS" -c . | podman import - localhost/py-base:bookworm >/dev/null
  rm -rf "$ROOTFS"
fi

if [ "${SKIP_BUILD:-0}" = 1 ] && podman image exists localhost/explorer:check; then
  log "SKIP_BUILD=1: reusing the image built before"
else
CONTEXT=$(mktemp -d "$WORK/context.XXXX")
# extracted as a clone is checked out (umask 022), not with git archive's group-writable modes
(umask 022; git -C "$REPO" archive HEAD | tar -C "$CONTEXT" -x --no-same-permissions)
log "building $(git -C "$REPO" rev-parse --short HEAD) with PIP_FIND_LINKS=$WHEELS"
nice podman build --isolation=chroot -v /etc/ssl/certs:/etc/ssl/certs:ro -v "$WHEELS:/wheels:ro" \
    --build-arg PIP_FIND_LINKS=/wheels \
    --build-arg BASE_IMAGE=localhost/py-base:bookworm -t localhost/explorer:check "$CONTEXT" >"$WORK/build.log" 2>&1 \
  || { tail -30 "$WORK/build.log"; echo "RESULT container: build FAILED (log $WORK/build.log)"; exit 1; }
rm -rf "$CONTEXT"
fi
size=$(podman image inspect localhost/explorer:check --format '{{.Size}}')
log "built: $size bytes ($(awk -v b="$size" 'BEGIN { printf "%.2f", b / 1e9 }') GB); its layers, newest first:"
podman history --format '{{.Size}}\t{{.CreatedBy}}' localhost/explorer:check | cut -c1-150 | tee "$WORK/history.txt"
if ! awk -v b="$size" -v gb="$IMAGE_BUDGET_GB" 'BEGIN { exit !(b <= gb * 1e9) }'; then
  echo "RESULT container: the image is $size bytes, over its budget of $IMAGE_BUDGET_GB GB"
  exit 1
fi

IMG=$(mktemp -d "$WORK/image.XXXX")
chmod 755 "$IMG"   # the image's root, entered by its user (uid 1000)
cid=$(podman create localhost/explorer:check)
podman export "$cid" | tar -C "$IMG" -x
podman rm "$cid" >/dev/null
ggufs=$(find "$IMG" -xdev -name '*.gguf*' -type f | sed "s|^$IMG||") || true
if [ -n "$ggufs" ]; then
  echo "$ggufs"
  echo "RESULT container: the image keeps GGUF files the app never reads"; rm -rf "$IMG"; exit 1
fi
for dir in proc dev; do mount --bind /$dir "$IMG/$dir"; done
mount -t tmpfs -o mode=1777 tmpfs "$IMG/dev/shm"   # as a container has (multiprocessing's semaphores)
mount -t tmpfs tmpfs "$IMG/tmp"
server=""
cleanup() {
  set +e   # every step runs, whatever the server's exit status
  [ -n "$server" ] && kill "$server" 2>/dev/null; [ -n "$server" ] && wait "$server" 2>/dev/null
  for dir in tmp dev/shm dev proc; do umount "$IMG/$dir" 2>/dev/null || umount -l "$IMG/$dir" 2>/dev/null || true; done
  grep -q " $IMG/" /proc/mounts || rm -rf "$IMG"   # never through a mount left in place
}
trap cleanup EXIT

# The image's ENV, as its user (uid 1000) from its WORKDIR.
as_user() {   # exec: the caller's $! (the server) is the app's own process
  exec env -i PATH=/opt/venv/bin:/usr/bin:/bin HOME=/home/explorer PYTHONUNBUFFERED=1 \
      GRADIO_ANALYTICS_ENABLED=False EXPLORER_CACHE=/home/explorer/.cache/transformer-explorer PYTHONPATH=/opt/app \
      HOST=127.0.0.1 PORT="$PORT" \
      /usr/sbin/chroot --userspec=1000:1000 "$IMG" /bin/sh -c "cd /home/explorer && $1"
}
# The precision the decode steps read, per embedded model (explorer.generate.step_cost).
expected=fp32; grep -qw avx512_vnni /proc/cpuinfo && expected=gguf
cat >"$IMG/tmp/served.py" <<'PY'
from explorer.checkpoints import EMBEDDED
from explorer.generate.step_cost import served_weights
from explorer.runtime import Runtime

runtime = Runtime()   # loads as the app does: each model with its own decode precision
print(" ".join(f"{name}={served_weights(runtime.get(name).model)}" for name in EMBEDDED))
PY
served=$( (as_user 'python /tmp/served.py') 2>"$WORK/served.log") \
  || { tail -5 "$WORK/served.log"; echo "RESULT container: no model loaded in the image"; exit 1; }
log "decode precision served in the image: $served (expected $expected on this CPU)"
if echo "$served" | tr ' ' '\n' | grep -qv "=$expected\$"; then
  echo "RESULT container: the image serves $served, not $expected"; exit 1
fi

# The image's CMD.
log "starting the image's app in a chroot on port $PORT"
(as_user 'exec python /opt/app/app.py') >"$WORK/app.log" 2>&1 &
server=$!
if "$PY" "$REPO/bench/ask_generation.py" "http://127.0.0.1:$PORT/" --timeout-s 600; then
  # The app warms every section's default answer after start (explorer/ui/warm.py): a section
  # that fails in the image logs "could not warm <section>". WARM_S seconds of it are watched.
  log "watching the sections' warm-up for ${WARM_S:-420} s"
  sleep "${WARM_S:-420}"
  failed=$(grep -o 'could not warm [a-z_.]*' "$WORK/app.log" | cut -d' ' -f4 | sort -u | tr '\n' ' ') || true
  log "sections that could not warm: ${failed:-none} (may fail here: ${WARM_MAY_FAIL-moe.pref})"
  for section in $failed; do
    case " ${WARM_MAY_FAIL-moe.pref} " in *" $section "*) continue ;; esac
    grep -A12 "could not warm $section" "$WORK/app.log" | grep -v '^    ' | tail -8
    echo "RESULT container: the section $section failed in the image (log $WORK/app.log)"
    exit 1
  done
  log "done"
  echo "RESULT container: built ($size bytes, budget $IMAGE_BUDGET_GB GB), served $served, answered a generation, sections warmed for ${WARM_S:-420} s, failed: ${failed:-none}, in $(( $(date +%s) - started )) s"
else
  tail -20 "$WORK/app.log"
  echo "RESULT container: the app did not answer (log $WORK/app.log)"
  exit 1
fi
