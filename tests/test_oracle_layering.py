"""Test oracles live in tests/ (tests/oracles/); benchmarks may import them, tests never import benchmarks.

An oracle a test relies on must not sit in a benchmark script that can change for a benchmark's sake. The two
exceptions exercise benchmark code itself and say why below."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

# test file -> why it may import benchmarks
ALLOWED = {
    "test_zoo.py": "runs the zoo benchmark's own runner, classifier and checks (it tests benchmarks/zoo itself)",
    "test_browser.py": "builds two zoo models (benchmarks/zoo builders: seeded, trained models with eval data) as "
    "inputs; its oracle is TensorFlow's own serving function, not benchmark code",
}


def _benchmark_references(path: Path) -> list[str]:
    """Imports of ``benchmarks`` and ``benchmarks/….js`` scripts to run, in one Python file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "benchmarks"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "benchmarks":
            found.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith("benchmarks/") and node.value.endswith(".js"):  # a script a test runs
                found.append(node.value)
    return found


def test_tests_do_not_import_benchmarks():
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.parent == TESTS and (path.name in ALLOWED or path.name == Path(__file__).name):
            continue
        refs = _benchmark_references(path)
        if refs:
            offenders[str(path.relative_to(REPO))] = refs
    assert not offenders, f"tests reach into benchmarks/ (move the oracle to tests/oracles/): {offenders}"


def test_the_scan_finds_an_import_and_a_script_path(tmp_path):
    """The rule can fail: an import, a from-import and a script path are each found."""
    f = tmp_path / "t.py"
    f.write_text(
        "import benchmarks.zoo\nfrom benchmarks._results import machine\n"
        "x = 'benchmarks/zoo/tfjs_check.js'\nimport os\n"
    )
    assert _benchmark_references(f) == ["benchmarks.zoo", "benchmarks._results", "benchmarks/zoo/tfjs_check.js"]


def test_benchmarks_use_the_oracles_from_tests():
    """The zoo and the converter benchmarks read the raw converter and the runners from tests/oracles/."""
    oracles = (REPO / "benchmarks" / "zoo" / "oracles.py").read_text()
    assert "tests.oracles.litert_run" in oracles and "tfjs_check.js" in oracles
    for name in ("bench_convert.py", "bench_mobilenet.py"):
        assert "from tests.oracles.raw_converter import" in (REPO / "benchmarks" / name).read_text()
