"""A mixed-precision Keras model rebuilt under the float32 policy with the same weights (for QAT, whose tfmot wrappers
compute in float32): the graph-level recast every other mode uses is ``edge_tool.models.precision``."""

from __future__ import annotations


def _float32_config(config):
    """A Keras config with every mixed dtype policy replaced by float32."""
    if isinstance(config, dict):
        if config.get("class_name") in ("Policy", "DTypePolicy", "FloatDTypePolicy") and isinstance(
            config.get("config"), dict
        ):
            name = str(config["config"].get("name", ""))
            if name.startswith("mixed_") or name in ("float16", "bfloat16"):
                return "float32"
        return {k: _float32_config(v) for k, v in config.items()}
    if isinstance(config, list):
        return [_float32_config(v) for v in config]
    if isinstance(config, str) and config in ("mixed_float16", "mixed_bfloat16"):
        return "float32"
    return config


def is_mixed_keras(model) -> bool:
    """True when a layer of the Keras ``model`` computes in float16/bfloat16."""
    return any(
        str(getattr(getattr(layer, "dtype_policy", None), "compute_dtype", "float32")) in ("float16", "bfloat16")
        for layer in [model, *model.submodules]
        if hasattr(layer, "dtype_policy")
    )


def float32_keras_model(model):
    """``model`` rebuilt from its config under the float32 policy with the same weights (a mixed policy keeps
    float32 variables); ValueError/TypeError/NotImplementedError when it cannot be rebuilt from its config."""
    rebuilt = model.__class__.from_config(_float32_config(model.get_config()))
    rebuilt.set_weights(model.get_weights())
    return rebuilt
