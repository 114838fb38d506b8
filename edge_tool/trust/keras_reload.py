"""``inspect``'s answer to "does this SavedModel reload as a Keras model?", asked only when that runs no untrusted
code."""

from __future__ import annotations

from pathlib import Path


def keras_reloadability(path: Path, flavor: str, code: dict) -> dict:
    """Really try tf_keras.models.load_model; a Keras model must come back, not a generic restored object. When
    ``code`` (``guard.code_report``) found code and it is not trusted, nothing is loaded: a Keras-2 SavedModel's
    answer is then null (not tried), the other flavours' is false (they hold no Keras config at all)."""
    found = [f"layer {f['layer']!r} ({f['kind']})" for f in code["python"]] + [
        f"op {f['op']} ({f['effect']})" for f in code["side_effect_ops"]
    ]
    if found and not code["trusted"]:
        why = (
            f"not loaded: the model carries code ({'; '.join(found[:3])}) that loading would run; "
            "--trust-model-code loads it (docs/security.md)"
        )
        ok = None if flavor == "keras2" else False
        return {"flavor": flavor, "reloadable_as_keras": ok, "note": _note(flavor, ok, why)}
    import tf_keras

    try:
        obj = tf_keras.models.load_model(str(path), compile=False)
        ok, why = isinstance(obj, tf_keras.Model), f"got {type(obj).__name__}"
    except Exception as exc:  # load_model raises many types; the answer is "not reloadable", with the reason
        ok, why = False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return {"flavor": flavor, "reloadable_as_keras": ok, "note": _note(flavor, ok, why)}


def _note(flavor: str, ok: bool | None, why: str) -> str:
    if flavor == "keras2":
        if ok:
            return (
                "Keras-2 SavedModel (tf_keras model.save, keras_metadata.pb): reloads with tf_keras.models.load_model."
            )
        return (
            f"has keras_metadata.pb; {why}."
            if ok is None
            else f"has keras_metadata.pb but did not reload as Keras ({why})."
        )
    if flavor == "keras3-export":
        return (
            "Keras-3 model.export() artefact: inference-only; load it with tf.saved_model.load. It can NOT be "
            "reloaded as a Keras model (Keras 3 load_model reads only .keras/.h5; tf_keras restores a generic "
            f"object: {why})."
        )
    return f"plain tf.saved_model.save module: load it with tf.saved_model.load; not a Keras model ({why})."
