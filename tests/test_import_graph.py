"""No import circles (between modules of edge_tool/calibration, or between edge_tool's subpackages), and no import
from a lower floor to a higher one (the floors of docs/architecture.md).

Every import counts, including those inside functions (they still tie the modules together); a module importing
its own parent package (``from edge_tool import __version__``) does not, since Python loads parents first anyway.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# repository folder -> the package name edgetool imports it by (calibration/ ships as edge_tool.calibration)
PACKAGES = {"edge_tool": "edge_tool", "calibration": "edge_tool.calibration"}
# edgetool's own code, which imports calibration by its installed name only
OWN_CODE = ("edge_tool", "tests", "benchmarks", "scripts")


def _modules() -> dict[str, Path]:
    mods = {}
    for folder, pkg in PACKAGES.items():
        for f in (REPO / folder).rglob("*.py"):
            name = ".".join((pkg, *f.relative_to(REPO / folder).with_suffix("").parts))
            mods[name.removesuffix(".__init__")] = f
    return mods


def _imports(name: str, path: Path, known: dict) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    """Module → the edgetool/calibration modules it imports."""
    mods = _modules()
    return {name: _imports(name, path, mods) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "edge_tool" and len(parts) > 1 else parts[0]


def test_no_module_import_cycles():
    assert cycles(graph()) == []


def test_no_package_import_cycles():
    packages: dict[str, set[str]] = {}
    for module, deps in graph().items():
        for dep in deps:
            if _package(dep) != _package(module):
                packages.setdefault(_package(module), set()).add(_package(dep))
    assert cycles(packages) == []


# edge_tool's floors, lowest first (docs/architecture.md). A package imports only packages on lower floors (calibration
# is below them all); never one on its own floor or above. A new subpackage gets its floor here.
FLOORS = (
    ("edge_tool.calibration",),  # calibration/: stands alone (imports nothing of edge_tool)
    ("edge_tool.errors",),
    ("edge_tool.core",),
    ("edge_tool.parsers", "edge_tool.webserver"),
    ("edge_tool.litert", "edge_tool.trust", "edge_tool.schemas"),  # schemas: the files edgetool writes
    ("edge_tool.metadata", "edge_tool.micro", "edge_tool.nodejs", "edge_tool.tflite_quantizer"),
    ("edge_tool.models",),
    ("edge_tool.lm",),  # language models: the contract, Keras decoder, prefill/decode export, sessions, sampling
    ("edge_tool.device",),  # a --device board: connection, board programs, facts (below evaluate and check)
    ("edge_tool.contract", "edge_tool.tflite_converter", "edge_tool.tasks", "edge_tool.training"),
    # the compilers built on the TFLite converter (and tasks and training): QAT, the TF.js writer, the LM compiler
    ("edge_tool.qat", "edge_tool.tfjs_writer", "edge_tool.lm_converter"),
    ("edge_tool.convert", "edge_tool.evaluate"),
    ("edge_tool.demo",),
    ("edge_tool.auto", "edge_tool.check", "edge_tool.keras_files"),
    ("edge_tool.api", "edge_tool.commands"),  # the Python API and the CLI's commands: neither imports the other
    ("edge_tool.cli",),
    ("edge_tool", "edge_tool.__main__"),
)


def upward_imports(edges: dict[str, set[str]], floors=FLOORS) -> list[str]:
    """'a -> b' for each module import whose target package is not on a lower floor than its own."""
    floor = {pkg: n for n, pkgs in enumerate(floors) for pkg in pkgs}
    out = []
    for module, deps in edges.items():
        for dep in deps:
            here, there = _package(module), _package(dep)
            if here != there and here.startswith("edge_tool") and floor.get(there, -1) >= floor[here]:
                out.append(f"{module} -> {dep}")
    return sorted(out)


def test_every_package_has_a_floor():
    placed = {pkg for pkgs in FLOORS for pkg in pkgs}
    assert {_package(m) for m in graph() if m.startswith("edge_tool")} - placed == set()


def test_no_import_reaches_up_or_sideways():
    assert upward_imports(graph()) == []


def test_the_floor_check_finds_an_upward_import():
    edges = {
        "edge_tool.convert.smoke": {"edge_tool.evaluate.pipeline", "edge_tool.errors"},
        "edge_tool.api": {"edge_tool.commands.convert"},
        "edge_tool.core.env": {"edge_tool.calibration.tfenv"},
    }
    assert upward_imports(edges) == [
        "edge_tool.api -> edge_tool.commands.convert",
        "edge_tool.convert.smoke -> edge_tool.evaluate.pipeline",
    ]


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _imported_roots(path: Path) -> set[str]:
    """Top-level names of every absolute import in ``path``, function-level and TYPE_CHECKING ones included."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            roots.add(str(node.args[0].value).split(".")[0])
    return roots


def test_calibration_imports_nothing_from_edge_tool():
    """The calibration package stands alone: no module of it imports edge_tool, at any level."""
    offenders = sorted(
        str(f.relative_to(REPO)) for f in (REPO / "calibration").rglob("*.py") if "edge_tool" in _imported_roots(f)
    )
    assert offenders == []


def test_the_standalone_check_sees_function_level_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def g():\n    if True:\n        from edge_tool.core.env import import_tf\n")
    assert "edge_tool" in _imported_roots(f)
    f.write_text("import importlib\nimportlib.import_module('edge_tool.errors')\n")
    assert "edge_tool" in _imported_roots(f)


def test_calibration_imports_itself_relatively():
    """calibration/ imports its own modules relatively: it names no package above itself, so it stands alone under
    the one name it is imported by, edge_tool.calibration (the top-level name is refused: tests/test_packaging.py)."""
    offenders = sorted(
        str(f.relative_to(REPO)) for f in (REPO / "calibration").rglob("*.py") if "calibration" in _imported_roots(f)
    )
    assert offenders == []


def test_edgetool_imports_calibration_by_one_name():
    """edgetool's code, tests, benchmarks and scripts import edge_tool.calibration, never the top-level name: one
    module identity, so an error class or dataclass never crosses from `calibration.x` to `edge_tool.calibration.x`
    (python scripts/rewrite_moved_imports.py renames what a merge brings in)."""
    offenders = sorted(
        str(f.relative_to(REPO))
        for folder in OWN_CODE
        for f in (REPO / folder).rglob("*.py")
        if "calibration" in _imported_roots(f)
    )
    assert offenders == []


def test_the_graph_sees_edgetool_importing_calibration():
    edges = graph()
    assert "edge_tool.calibration.spec" in edges["edge_tool.calibration.loader"]  # relative, inside calibration
    assert any(d.startswith("edge_tool.calibration.") for d in edges["edge_tool.errors"])
