"""``edgetool convert`` of a contract language model (issue 39, LM_CONTRACT.md): one multi-signature .tflite per LM mode
(``modes``), each checked by a chunked prefill + decode against the SavedModel (``selfcheck``), written with a
manifest (``run``) and optionally packed as a ``.litertlm`` (``litertlm``)."""
