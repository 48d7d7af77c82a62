"""Where the weights come from (being split into modules named for what they hold)."""
from .conversion import *  # noqa: F401,F403
from .conversion import (  # noqa: F401 -- names with an underscore, used by tests
    _is_complete, _load_from_gguf, _write_weights)
