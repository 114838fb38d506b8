"""The policy: scan a model before any loader touches it; refuse code unless ``trust`` (``--trust-model-code``).

Every loader of a SavedModel graph (``modelio``), of a Keras object (``convert.source``, ``fixed_batch``, QAT,
``inspect``) and of a .tflite artefact (eval, check, demo) calls one of the ``require_*`` functions first. Scans are
cached per file state, so calling them again on the same model costs a ``stat``.
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.errors import ModelCodeRefused, ModelError
from edge_tool.trust import TRUST_FLAG, custom_objects
from edge_tool.trust.graph_scan import OpFinding, scan_saved_model, scan_tflite
from edge_tool.trust.keras_code import NAME_ONLY, CodeFinding, scan_keras_code
from edge_tool.trust.op_libraries import library_ops, op_library_refusal
from edge_tool.trust.side_effects import PYTHON_CALLBACK_OPS, python_callback_refusal

_TRUST_SAYS = (
    f"If you trust where the model came from, rerun with {TRUST_FLAG} (it lets edgetool deserialize "
    "Python code from model files and run graphs with such ops; docs/security.md)."
)
_CACHE: dict = {}
SERVING = "serving_default"  # the signature a command runs when none is named (models.signatures.SERVING)


def _state(path: Path) -> tuple:
    files = (
        [path / "saved_model.pb", path / "saved_model.pbtxt", path / "keras_metadata.pb"] if path.is_dir() else [path]
    )
    return tuple((f.name, s.st_size, s.st_mtime_ns) for f in files if f.exists() for s in [f.stat()])


def _cached(kind: str, path: Path, scan, *args):
    path = Path(path)
    key = (kind, str(path.resolve()), _state(path), *args)
    if key not in _CACHE:
        _CACHE[key] = scan(path, *args)
    return _CACHE[key]


def keras_code(path: Path) -> tuple[CodeFinding, ...]:
    """Python code in the Keras config of a .h5/.keras file or of a SavedModel's keras_metadata.pb."""
    return _cached("keras", path, scan_keras_code)


def side_effect_ops(path: Path, signature: str | None = None) -> tuple[OpFinding, ...]:
    """Side-effect ops of a SavedModel directory (what loading it and calling ``signature``, default
    serving_default, executes; every function when it has no such signature) or a .tflite file (Flex ops); () for
    other files."""
    path = Path(path)
    if path.is_dir():
        is_saved_model = (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file()
        return _cached("graph", path, scan_saved_model, signature or SERVING) if is_saved_model else ()
    if path.is_file() and _is_tflite(path):
        return _cached("tflite", path, scan_tflite)
    return ()


def _is_tflite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(8)[4:8] == b"TFL3"


def _is_saved_model(path: Path) -> bool:
    return path.is_dir() and ((path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file())


def code_report(path: Path, trust: bool) -> dict:
    """``inspect``'s ``model_code``: what the scans find in ``path`` (read from its files; nothing is loaded): every
    function of a SavedModel's library, called by its signatures or not."""
    python = keras_code(path) if Path(path).is_dir() else ()
    path = Path(path)
    saved = _is_saved_model(path)
    ops = _cached("graph-all", path, scan_saved_model) if saved else side_effect_ops(path)
    libraries = _cached("libraries", path, library_ops) if saved else {}
    return {
        "python": [f.to_dict() for f in python],
        "side_effect_ops": [f.to_dict() for f in ops],
        "trusted": trust,
        **({"op_libraries": libraries, "op_library_note": op_library_refusal(path, libraries)} if libraries else {}),
    }


def require_no_keras_code(path: Path, trust: bool, need: str, way_out: str = "") -> tuple[CodeFinding, ...]:
    """ModelCodeRefused unless ``trust`` when building a Keras object from ``path`` would run code; ``need`` says
    what needs the Keras object (a clause: "--batch 1 needs a Keras object"), ``way_out`` how to do without it.
    Returns the findings."""
    found = keras_code(path)
    _refuse_name_only(path, found, need)
    if found and not trust:
        listed = "; ".join(f.describe() for f in found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise ModelCodeRefused(
            f"{path} carries Python code in its Keras config: {listed} (in {found[0].where}). {need}, and "
            "building that object would deserialize and run this code (tf_keras's safe mode covers only .keras "
            "files; .h5 files and keras_metadata.pb have none), so edgetool refuses. "
            f"{_TRUST_SAYS} {way_out or _KERAS_WAY_OUT}"
        )
    return found


def _refuse_name_only(path: Path, found: tuple[CodeFinding, ...], need: str) -> None:
    """ModelCodeRefused when a custom class is stored by name only (Keras 3 ``register_keras_serializable`` classes
    from a script): no loader here can rebuild it, trusted or not, so the way out is the graph, saved where the
    class is defined."""
    missing = [f for f in found if NAME_ONLY in f.kind]
    if not missing or custom_objects.active().specs:  # --custom-objects may define them (the loader says if not)
        return
    listed = "; ".join(f.describe() for f in missing[:5]) + (
        f"; and {len(missing) - 5} more" if len(missing) > 5 else ""
    )
    raise ModelCodeRefused(
        f"{path} uses custom Keras classes whose code is not in the file: {listed} (in {missing[0].where}). "
        f"{need}, and Keras rebuilds such a class only in a Python process that defines it (the script or package "
        f"that built the model); no module edgetool can import defines it, so {TRUST_FLAG} alone cannot help. "
        f"Give the module that defines it: {custom_objects.FLAG} my_pkg.layers (or layers.py) {TRUST_FLAG} "
        "(it imports that code). Or, where the class is defined, save the model's graph (Keras 3: "
        "model.export(DIR); or tf.saved_model.save(model, DIR)) and give edgetool DIR: converting a SavedModel "
        "needs no Keras object."
    )


_KERAS_WAY_OUT = (
    "Otherwise re-save the model without that code (built-in layers instead of the Lambda), or save "
    "its graph where you trust the code (Keras 3 model.export(DIR), tf.saved_model.save(model, DIR)) "
    "and give edgetool DIR: converting a SavedModel needs no Keras object."
)


def require_no_side_effects(path: Path, trust: bool, doing: str, signature: str | None = None) -> tuple[OpFinding, ...]:
    """ModelCodeRefused unless ``trust`` when the graph (or .tflite) at ``path`` holds side-effect ops that running
    ``signature`` (default serving_default) executes; ``doing`` says what would run it. Returns the findings."""
    if _is_saved_model(Path(path)) and (libraries := _cached("libraries", path, library_ops)):  # nothing loaded
        raise ModelError(op_library_refusal(path, libraries))
    found = side_effect_ops(path, signature)
    listed = "; ".join(f.describe() for f in found[:6]) + (f"; and {len(found) - 6} more" if len(found) > 6 else "")
    callbacks = sorted({f.op for f in found} & PYTHON_CALLBACK_OPS.keys())
    if callbacks:  # trust cannot help: the callback lives only in the process that traced the model
        raise ModelCodeRefused(f"{python_callback_refusal(path, callbacks)} Found: {listed}.")
    if found and not trust:
        raise ModelCodeRefused(
            f"{path} holds ops with effects outside the model's tensors: {listed}. {doing} would execute them, "
            f"so edgetool refuses (edgetool inspect {path} lists them without running anything). {_TRUST_SAYS} "
            "Otherwise re-export the model with signatures that only compute tensors."
        )
    return found


_RUNS = {
    "convert": "its float self-check and the int8 calibration run the graph",
    "check": "it converts the model and runs the result",
    "demo": "it converts the model, and --litert calibrates it",
    "eval": "it runs the reference and each artefact",
    "inspect": "loading it runs its restore and initialiser functions",
}


def require_safe_model(path: Path, trust: bool, command: str, signature: str | None = None) -> None:
    """The checks for the model argument of ``edgetool COMMAND`` (a key of ``_RUNS``) before any loader: a Keras
    file becomes a Keras object (its Python code), a SavedModel or .tflite is run (the side-effect ops its
    ``signature``, default serving_default, executes)."""
    path = Path(path)
    if path.is_file() and path.suffix.lower() in (".h5", ".hdf5", ".keras"):
        require_no_keras_code(path, trust, f"edgetool {command} needs this Keras file as a Keras object")
    elif path.exists():
        require_no_side_effects(
            path, trust, f"edgetool {command} ({_RUNS.get(command, 'it runs the model')})", signature
        )
