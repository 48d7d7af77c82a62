"""The claims board: one row per claim of docs/CLAIMS.md, computed from live evidence
(evidence.py: the shape every evidence function returns)."""
