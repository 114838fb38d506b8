"""The one way edgetool starts a child Python: isolated from the current directory and from PYTHONPATH.

A plain ``python -c CODE`` or ``python -m MOD`` puts the current directory first on ``sys.path`` (and honours
PYTHONPATH), so a ``numpy.py`` in the directory edgetool was run from would be imported and executed by the
child. Every child is therefore started with ``-I`` (no current directory, no PYTHON* variables, no user
site-packages). When this interpreter itself imports from the user site-packages (``pip install --user``),
``-I`` would hide edgetool's own dependencies from the child, so it gets ``-E -P`` instead: the same minus ``-s``;
the user site is the user's own install location, not the current directory. Settings the parent had through
PYTHON* variables that matter to a child are passed as flags (``-B``, ``-X utf8``, and ``-u`` on request).

edgetool's own modules run through a tiny bootstrap that appends the directory holding ``edge_tool`` to
``sys.path`` (last, so it cannot shadow anything), so a child runs the same edgetool as its parent even when
the parent found it through PYTHONPATH (which ``-I`` drops) — and never a copy found through the current directory.
"""

from __future__ import annotations

import site
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding the edge_tool package

_BOOT = (
    "import runpy, sys; r = {root!r}; r in sys.path or sys.path.append(r); "
    "runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
)


def _uses_user_site() -> bool:
    """True when this interpreter imports from the user site-packages directory."""
    return bool(site.ENABLE_USER_SITE) and site.getusersitepackages() in sys.path


def isolation_flags(unbuffered: bool = False) -> list[str]:
    """Interpreter flags for a child that imports nothing from the current directory or PYTHONPATH."""
    flags = ["-E", "-P"] if _uses_user_site() else ["-I"]
    if sys.flags.dont_write_bytecode:
        flags.append("-B")
    if sys.flags.utf8_mode:
        flags += ["-X", "utf8"]
    if unbuffered:
        flags.append("-u")
    return flags


def python_command(*args: str, unbuffered: bool = False) -> list[str]:
    """``[python, isolation flags, *args]``: e.g. ``python_command("-c", CODE, arg)``."""
    return [sys.executable, *isolation_flags(unbuffered), *map(str, args)]


def module_command(module: str, *args, unbuffered: bool = False) -> list[str]:
    """An isolated child running edgetool's module ``module`` as ``__main__`` (like ``python -m``) with ``args``."""
    if not module.startswith("edge_tool."):
        raise ValueError(f"module_command runs edgetool's own modules only, not {module!r}")
    return python_command("-c", _BOOT.format(root=ROOT, module=module), *args, unbuffered=unbuffered)
