"""How many runs the shared decode loop holds, and how many of them one visitor may have.
Read once from the environment at import; Scheduler takes each as an argument too."""
from __future__ import annotations

import os

# A class is up to ~40 visitors pressing Start together. On 2 cores, 40 in one step stream at
# ~4.8 tokens/s each with a first token within ~2.5 s (p95) and more tokens/s in all than 30;
# with 32 in a step the other 8 waited ~10 s for a place (bench.classroom, docs/SCALING.md).
# Past MAX_BATCH runs wait, and past the queue are refused.
MAX_BATCH = int(os.environ.get("EXPLORER_MAX_BATCH", "40"))
MAX_WAITING = int(os.environ.get("EXPLORER_MAX_WAITING", "32"))
# Runs one visitor may have decoding or waiting at once: a page runs one at a time (two when
# Start and Enter overlap); an address is a classroom's machine, or a whole school behind one
# NAT, so it gets a quarter of the loop: one client's flood leaves the rest to everyone else.
MAX_RUNS_PER_SESSION = int(os.environ.get("EXPLORER_MAX_RUNS_PER_SESSION", "4"))
MAX_RUNS_PER_ADDRESS = int(os.environ.get("EXPLORER_MAX_RUNS_PER_ADDRESS",
                                          str(max(1, (MAX_BATCH + MAX_WAITING) // 4))))
