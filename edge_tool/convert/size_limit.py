"""A .tflite is one FlatBuffer, which addresses at most 2 GiB: the modes whose file the model's declared weights would
push over it are refused before anything converts (issue 43, item 2), naming the limit, the declared bytes and the
modes that fit. TF 2.19's converter can place buffers after the FlatBuffer (the private, experimental
``_experimental_use_buffer_offset``), but LiteRT's loaders, edgetool's own .tflite readers and the page's runtimes
all take one FlatBuffer of at most 2 GiB — so edgetool does not write such files; it refuses instead.
"""

from __future__ import annotations

import dataclasses

from edge_tool.convert.modes import MODES, named_modes
from edge_tool.errors import ConversionError
from edge_tool.parsers.declared_weights import declared_weight_bytes
from edge_tool.parsers.limits import FLATBUFFER_MAX


def weight_share(mode: str) -> float:
    """The share of the float32 weight bytes mode ``mode``'s file holds (1, 1/2, 1/4, 1/8: its weight bits / 32)."""
    return MODES[mode].weight_bits / 32


def modes_that_fit(weight_bytes: int, limit: int = FLATBUFFER_MAX) -> tuple[str, ...]:
    """The modes ``--quant`` builds without training data whose weights, at ``weight_bytes`` declared float32 bytes, stay under
    ``limit``."""
    return tuple(name for name in named_modes() if not MODES[name].needs_train_data and fits(name, weight_bytes, limit))


def fits(mode: str, weight_bytes: int, limit: int = FLATBUFFER_MAX) -> bool:
    """True when mode ``mode``'s file of a model declaring ``weight_bytes`` of float32 weights stays under ``limit``."""
    return weight_bytes * weight_share(mode) < limit


def too_large_message(mode: str, weight_bytes: int, fit: tuple[str, ...], limit: int = FLATBUFFER_MAX) -> str:
    """Why ``mode`` is refused: the limit, the model's declared weight bytes, what the file would hold, what fits."""
    need = int(weight_bytes * weight_share(mode))
    way = (
        f"convert with --quant {','.join(fit)} (fp16 halves the float weights, dynamic/int8/int16x8/weight-int8 quarter them, weight-int4 eighths them)"
        if fit
        else "no mode's file fits: split the model, or convert it to TF.js (--format tfjs shards its weights)"
    )
    return (
        f"--quant {mode}: a .tflite is one FlatBuffer, which holds at most {limit:,} bytes (2 GiB); this model "
        f"declares {weight_bytes:,} bytes of weights, so its {mode} file would hold about {need:,}. Nothing was "
        f"converted for it. {way[0].upper()}{way[1:]}."
    )


def drop_modes_too_large(config) -> tuple[object, dict[str, str]]:
    """(``config`` without the modes whose .tflite would pass 2 GiB, {mode: why}); ConversionError when a requested
    mode would not fit and nothing else is left to build (or the run is not keep-going), before any conversion."""
    if not config.runs_mode_builds:
        return config, {}
    weight_bytes = declared_weight_bytes(config.model)
    if weight_bytes is None:
        return config, {}
    fit = modes_that_fit(weight_bytes)
    over = [m for m in config.modes if not fits(m.value, weight_bytes)]
    if not over:
        return config, {}
    why = {m.value: too_large_message(m.value, weight_bytes, fit) for m in over}
    kept = tuple(m for m in config.modes if m not in over)
    if not (kept and config.keep_going):
        raise ConversionError(" ".join(why.values()))
    return dataclasses.replace(config, modes=kept), {m: " ".join(w.split()) for m, w in why.items()}
