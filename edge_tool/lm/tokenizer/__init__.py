"""The LM tokenizers (``edgetool_lm.json``'s ``tokenizer``): one module per tokenizer, each registering its
``TokenizerKind`` in ``registry.TOKENIZERS`` at import; ``registry.load_tokenizer`` gives a model's tokenizer."""

from __future__ import annotations

# isort: off
# each module registers itself; this order is TOKENIZERS' order (edge_tool.lm.spec.TOKENIZERS lists the same names)
from edge_tool.lm.tokenizer import byte, bpe  # noqa: F401

# isort: on
