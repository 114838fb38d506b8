"""A model file is code: find it before anything runs, refuse it unless the user passed ``--trust-model-code``.

``keras_code`` reads Keras configs (Lambda bytecode, foreign modules), ``graph_scan`` reads SavedModel graphs and
.tflite Flex ops for the side-effect ops of ``side_effects``; ``guard`` is the policy every loader calls.
"""

TRUST_FLAG = "--trust-model-code"
TRUST_HELP = (
    "Trust the model's code: let edgetool deserialize Python from model files (Lambda layers in .h5, "
    ".keras and keras_metadata.pb; classes from modules outside Keras) and run graphs holding ops with "
    "effects outside tensors (WriteFile, PyFunc, …). Without it such a model is refused (exit 2); see "
    "docs/security.md."
)
