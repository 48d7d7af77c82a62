"""The MoE tab's machinery: the training corpus and tokenizer (corpus.py), the training command
(train.py, `python -m explorer.moe.train`), the experiments the tab shows, and the claims board's
rows for C14 and C15 (evidence.py), read through the criteria the tab shows."""
