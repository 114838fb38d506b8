"""No source module over MAX_LINES lines (issue 13): a module that long does more than one job; split it by job.

Counts every .py under the project's code folders and every .js of the page template (its vendored runtimes and
node_modules excepted). The exemptions below are the whole list, each with its reason.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 300
PY_ROOTS = ("edge_tool", "calibration", "web_demo", "benchmarks", "scripts")
JS_ROOT = "web_demo"
NOT_OURS = {"vendor", "node_modules", ".cache", "__pycache__"}  # vendored runtimes, installed packages, caches
EXEMPT = {
    # generated from the TFLite metadata flatbuffer schema by flatc and vendored unchanged; never edited by hand
    "edge_tool/metadata/metadata_schema_py_generated.py": "generated flatbuffer code"
}


def _sources() -> list[Path]:
    files = [f for root in PY_ROOTS for f in (REPO / root).rglob("*.py")]
    files += (REPO / JS_ROOT).rglob("*.js")
    return sorted(f for f in files if not NOT_OURS & set(f.relative_to(REPO).parts))


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_the_limit():
    sources = _sources()
    assert len(sources) > 100, f"only {len(sources)} source files found under {REPO}: the walk is broken"
    too_long = {
        str(f.relative_to(REPO)): n
        for f in sources
        if (n := _lines(f)) > MAX_LINES and str(f.relative_to(REPO)) not in EXEMPT
    }
    assert not too_long, f"modules over {MAX_LINES} lines (split each by responsibility, not by line count): {too_long}"


def test_every_exemption_is_still_needed():
    """An exempt file that is gone or back under the limit leaves the list, so the list never outgrows the need."""
    stale = [name for name in EXEMPT if not (REPO / name).is_file() or _lines(REPO / name) <= MAX_LINES]
    assert not stale, f"exemptions no longer needed (remove them from EXEMPT): {stale}"


def test_the_walk_covers_the_code_and_skips_vendored_files():
    found = {str(f.relative_to(REPO)) for f in _sources()}
    assert {"edge_tool/cli.py", "calibration/__init__.py", "web_demo/app.js", "benchmarks/_results.py"} <= found
    assert not any(NOT_OURS & set(Path(name).parts) for name in found)
