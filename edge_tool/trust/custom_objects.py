"""``--custom-objects``: the Python modules that define a Keras model's custom classes, given explicitly.

A ``.keras``/``.h5`` file stores a custom layer (``register_keras_serializable``, tf_keras' equivalent, or a plain
subclass) by name only; Keras rebuilds it only in a process where that class is defined. ``--custom-objects
my_pkg.layers`` (a module path, imported with the working directory on ``sys.path``) or ``--custom-objects
layers.py`` (a file) imports it — which runs its code, so it needs ``--trust-model-code`` like any other model code
(refused, exit 2, without) — and every Keras loader of the command then gets the classes and functions the module
defines as Keras' ``custom_objects`` (Keras 3 children import the same modules before loading). Importing also
runs the module's registration decorators, so registered names (``package>Name``) resolve too.

The command sets what is active once (``use``) before any loader runs; loaders read ``active()``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.calibration.safe_open import kind_of
from edge_tool.core import signals
from edge_tool.core.childproc import python_command
from edge_tool.errors import ModelCodeRefused, UsageError
from edge_tool.trust import TRUST_FLAG

FLAG = "--custom-objects"
HELP = (
    "Python module (my_pkg.layers) or .py file defining the model's custom Keras classes (repeatable). It is "
    f"imported (its code runs), so it needs {TRUST_FLAG}; Keras then loads the model with those classes."
)


@dataclass(frozen=True)
class CustomObjects:
    """The modules given (as written) and the ``{name: class or function}`` they define."""

    specs: tuple[str, ...] = ()
    objects: dict = field(default_factory=dict, compare=False)


_ACTIVE = [CustomObjects()]


def active() -> CustomObjects:
    """What this command's ``--custom-objects`` made available (empty without)."""
    return _ACTIVE[0]


def use(specs, trust: bool) -> CustomObjects:
    """Import ``specs`` (``--custom-objects`` values) and make their classes the active custom objects; with none,
    clear them. ModelCodeRefused without ``trust``; UsageError naming a module that cannot be imported."""
    specs = tuple(specs or ())
    if specs and not trust:
        raise ModelCodeRefused(
            f"{FLAG} {' '.join(specs)} imports that Python code and runs it (its classes become the model's "
            f"custom Keras layers), and edgetool runs no model code without {TRUST_FLAG}. Add {TRUST_FLAG} if "
            "you trust that module (docs/security.md)."
        )
    for spec in specs:
        check_spec(spec)
    if specs:
        probe_in_child(specs)
    objects = {}
    for spec in specs:
        objects.update(defined_in(import_spec(spec)))
    _ACTIVE[0] = CustomObjects(specs, objects)
    return _ACTIVE[0]


def import_spec(spec: str):
    """Import a module path (working directory first on ``sys.path``) or a ``.py`` file; UsageError when neither
    works, with the reason."""
    path = Path(spec)
    try:
        if spec.endswith(".py"):
            if not path.is_file():
                raise UsageError(f"{FLAG} {spec}: no such file; expected a .py file or a module path (my_pkg.layers).")
            name = f"edgetool_custom_{path.stem}"
            if name in sys.modules:
                return sys.modules[name]
            module_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
            return module
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(spec)
    except UsageError:
        raise
    except BaseException as exc:  # the user's module: whatever it raised (sys.exit too) is a failed import
        if signals.is_stop(exc):
            raise
        sys.modules.pop(f"edgetool_custom_{path.stem}", None)
        raise UsageError(f"{FLAG} {spec} could not be imported: {_reason(exc)}. {_WAY_OUT}") from None


_WAY_OUT = "Give a module path importable from the working directory (my_pkg.layers) or a .py file"


def _reason(exc: BaseException) -> str:
    """What a module's import raised, in words: ``SystemExit`` says the module tried to end the process."""
    if isinstance(exc, SystemExit):
        return (
            f"it called sys.exit({exc.code!r}) (raised SystemExit) while being imported; a module must not end edgetool"
        )
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"[:300]


def check_spec(spec: str) -> None:
    """UsageError, before anything is imported, unless ``spec`` is an existing regular ``.py`` file or a dotted
    module name of identifiers (``my_pkg.layers``); the message names what was found instead."""
    shown = repr(spec)[:200]
    try:
        mode = os.stat(spec).st_mode if spec else None
    except (OSError, ValueError):
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{FLAG} {shown} is {kind_of(mode)}; expected a .py file or a module path (my_pkg.layers).")
    if spec.endswith(".py"):
        if mode is None:
            raise UsageError(f"{FLAG} {shown}: no such file; expected a .py file or a module path (my_pkg.layers).")
        return
    if mode is not None:
        raise UsageError(f"{FLAG} {shown} is a file without the .py suffix; expected a .py file or a module path.")
    if not spec or not all(part.isidentifier() for part in spec.split(".")):
        what = "empty" if not spec else "neither an existing .py file nor a dotted module name (my_pkg.layers)"
        raise UsageError(f"{FLAG} {shown} is {what}; nothing was imported. {_WAY_OUT}.")


PROBE = r"""
import sys
specs = sys.argv[1:]
try:
    _edgetool_custom_objects(specs)
except BaseException as exc:
    first = (str(exc).splitlines() or [""])[0]
    print("EDGETOOL-PROBE-FAILED:" + type(exc).__name__ + ": " + first[:300], flush=True)
    sys.stdout.flush()
    import os
    os._exit(0)
print("EDGETOOL-PROBE-OK", flush=True)
import os
os._exit(0)  # a thread the module started must not keep the child (and edgetool) waiting
"""


def probe_in_child(specs: tuple[str, ...]) -> None:
    """Import ``specs`` once in a child Python first: a module that ends its process (``os._exit``, a fatal
    signal) ends only the child, and the run is refused (exit 2) instead of ending with the module's exit code."""
    proc = subprocess.run(
        python_command("-c", CHILD_IMPORTS + PROBE, *specs), capture_output=True, text=True, errors="replace"
    )
    lines = proc.stdout.splitlines()
    if "EDGETOOL-PROBE-OK" in lines:
        return
    failed = [ln.split(":", 1)[1] for ln in lines if ln.startswith("EDGETOOL-PROBE-FAILED:")]
    if failed:
        raise UsageError(f"{FLAG} {' '.join(specs)} could not be imported: {failed[-1]}. {_WAY_OUT}.")
    how = f"exit status {proc.returncode}" if proc.returncode >= 0 else f"signal {-proc.returncode}"
    raise UsageError(
        f"{FLAG} {' '.join(specs)}: importing it (in a child process, first) ended that process ({how}) without "
        "finishing the import — the module calls os._exit() or kills itself. A module must not end edgetool; "
        f"fix the module. Nothing was imported here. {_WAY_OUT}."
    )


def defined_in(module) -> dict:
    """The classes and functions ``module`` defines itself (not the ones it imports), by name."""
    return {
        name: obj
        for name, obj in vars(module).items()
        if not name.startswith("_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__
    }


CHILD_IMPORTS = r"""
def _edgetool_custom_objects(specs):
    import importlib, importlib.util, os, sys
    found = {}
    for spec in specs:
        if spec.endswith(".py"):
            name = "edgetool_custom_" + os.path.splitext(os.path.basename(spec))[0]
            ms = importlib.util.spec_from_file_location(name, spec)
            module = importlib.util.module_from_spec(ms)
            sys.modules[name] = module
            try:
                ms.loader.exec_module(module)
            except SystemExit as exc:
                raise RuntimeError("--custom-objects " + spec + " called sys.exit(" + repr(exc.code) + ")") from None
        else:
            sys.path.insert(0, os.getcwd())
            try:
                module = importlib.import_module(spec)
            except SystemExit as exc:
                raise RuntimeError("--custom-objects " + spec + " called sys.exit(" + repr(exc.code) + ")") from None
        found.update({k: v for k, v in vars(module).items()
                      if not k.startswith("_") and callable(v) and getattr(v, "__module__", None) == module.__name__})
    return found
"""
"""Source of ``_edgetool_custom_objects(specs)`` for a Keras child process: the same imports, the same dict."""
