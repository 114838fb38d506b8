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
import sys
from dataclasses import dataclass, field
from pathlib import Path

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
    specs = tuple(s for s in (specs or ()) if s)
    if specs and not trust:
        raise ModelCodeRefused(
            f"{FLAG} {' '.join(specs)} imports that Python code and runs it (its classes become the model's "
            f"custom Keras layers), and edgetool runs no model code without {TRUST_FLAG}. Add {TRUST_FLAG} if "
            "you trust that module (docs/security.md)."
        )
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
    except Exception as exc:  # the user's module: any error while importing it is theirs to see
        sys.modules.pop(f"edgetool_custom_{path.stem}", None)
        raise UsageError(
            f"{FLAG} {spec} could not be imported: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            ". Give a module path importable from the working directory (my_pkg.layers) or a .py file."
        ) from None


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
            ms.loader.exec_module(module)
        else:
            sys.path.insert(0, os.getcwd())
            module = importlib.import_module(spec)
        found.update({k: v for k, v in vars(module).items()
                      if not k.startswith("_") and callable(v) and getattr(v, "__module__", None) == module.__name__})
    return found
"""
"""Source of ``_edgetool_custom_objects(specs)`` for a Keras child process: the same imports, the same dict."""
