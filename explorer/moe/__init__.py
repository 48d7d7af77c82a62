"""The MoE tab's machinery: the training corpus and tokenizer (corpus.py), the training command
(train.py, `python -m explorer.moe.train`), and the experiments the tab shows."""
