"""Which other signature of a SavedModel a user can pick when the chosen one takes strings (TF-Serving exports:
``serving_default`` decodes JPEG/PNG bytes inside, a second signature takes the pixels): the way out a refusal of a
string input names, read from saved_model.pb alone."""

from __future__ import annotations

from pathlib import Path

from edge_tool.models.signatures import SERVING, saved_model_signature, signature_keys
from edge_tool.trust.guard import side_effect_ops

STRING_DTYPES = ("string", "object", "bytes")


def takes_strings(info) -> bool:
    """True when a SignatureInfo has a string input."""
    return any(t.dtype in STRING_DTYPES for t in info.inputs)


def numeric_signatures(path: Path, current: str | None) -> list:
    """SignatureInfos of the SavedModel at ``path`` other than ``current`` whose inputs are all numeric ([] for
    anything that is not a SavedModel directory)."""
    path = Path(path)
    if not ((path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()):
        return []
    found = []
    for key in signature_keys(path):
        if key != (current or SERVING):
            info = saved_model_signature(path, key)
            if info.inputs and not takes_strings(info):
                found.append(info)
    # the one to name first: a signature that runs no side-effect op, a serving_* one, then by name
    return sorted(found, key=lambda i: (bool(side_effect_ops(path, i.key)), not i.key.startswith("serving"), i.key))


def _describe(info) -> str:
    inputs = ", ".join(
        f"{t.name} {t.dtype}[{','.join('N' if d is None else str(d) for d in (t.shape or ()))}]" for t in info.inputs
    )
    return f"{info.key} ({inputs})"


def numeric_signature_way_out(path: Path, current: str | None, command: str = "") -> str:
    """The sentence a refusal of a string input adds: the signatures of ``path`` taking numeric input and the
    ``--signature NAME`` that picks one (``command``, when given, is the full command line before the option);
    "" when there is none (then the string part has to leave the model)."""
    found = numeric_signatures(path, current)
    if not found:
        return ""
    listed = "; ".join(_describe(i) for i in found)
    run = f"`{command} --signature {found[0].key}`" if command else f"--signature {found[0].key}"
    return (
        f" The SavedModel has {'a signature' if len(found) == 1 else 'signatures'} taking numeric input: {listed}; "
        f"{run} uses {'it' if len(found) == 1 else 'the first'} (the app decodes the image and feeds the pixels)."
    )
