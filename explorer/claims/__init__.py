"""The claims board: one row per claim of docs/CLAIMS.md, computed from live evidence.

evidence.py   Measure, Evidence: the shape every evidence function returns
registry.py   which function computes each claim's evidence ("module:function"), imported lazily
board.py      run them all on the loaded model (time limits, errors as failing rows, a cache per
              model and device), and the table and summary in the visitor's language
The tab is explorer/ui/tabs/claims.py; bench/claims.py times the real board.
"""
