"""The About tab's one computed piece: the model card of the loaded model (card.py)."""
