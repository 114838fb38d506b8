"""``edgetool convert``: one source model to every requested format (``formats/``) in every requested quantization
mode (``modes/``), written atomically with a manifest (``api.convert``)."""
