"""The demo page's ES modules: their pure parts under `node --test` (tests/js/), and the site's file list."""

from __future__ import annotations

import posixpath
import re
import shutil
import subprocess
import pytest

from edge_tool.demo.site import LITERT_MODULE, LITERT_MODULES, TEMPLATE_FILES
from tests.conftest import REPO

WEB = REPO / "web_demo"
JS_TESTS = sorted((REPO / "tests" / "js").glob("*.test.mjs"))
IMPORT = re.compile(r"""(?:^import\s[^'"]*?from\s|^export\s[^'"]*?from\s|\bimport\()\s*['"](\.{1,2}/[^'"]+)['"]""", re.M)
MAX_LINES = 300


MIN_NODE = (20, 19)  # the first Node that loads ES modules from a package.json without "type" (web_demo/'s)


def _node() -> str:
    node = shutil.which("node")
    if node is None:  # CI installs node (scripts/setup.sh vendors the runtimes with npm): a missing node is a failure
        pytest.fail("`node` is not on PATH: the page's JS tests (tests/js/) need Node.js 20.19 or newer")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    found = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    if found < MIN_NODE:
        pytest.fail(f"node {version} is too old for the page's JS tests: they need Node.js 20.19 or newer")
    return node


def test_page_modules_pass_their_node_tests():
    assert len(JS_TESTS) >= 3, JS_TESTS
    proc = subprocess.run([_node(), "--test", *map(str, JS_TESTS)], capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    summary = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", proc.stdout, re.M))
    assert proc.returncode == 0 and summary.get("fail") == "0", proc.stdout[-4000:] + proc.stderr[-2000:]
    assert int(summary["pass"]) == int(summary["tests"]) >= 15


def _imports(module: str) -> set[str]:
    """Site paths of the modules `module` imports by relative path (static or dynamic), transitively."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        seen.add(current)
        for target in IMPORT.findall((WEB / current).read_text()):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
            if resolved not in seen:
                todo.append(resolved)
    return seen


def test_the_site_copies_every_module_the_page_imports():
    copied = {name for name in TEMPLATE_FILES if name.endswith(".js")}
    assert _imports("app.js") == copied  # nothing missing (offline would break), nothing unused
    assert _imports(LITERT_MODULE) - copied == set(LITERT_MODULES)  # --litert adds exactly these
    js = sorted(p.relative_to(WEB).as_posix() for p in WEB.rglob("*.js") if "vendor" not in p.parts
                and "node_modules" not in p.parts and p.name != "sw.template.js")
    assert sorted(copied | set(LITERT_MODULES)) == js


@pytest.mark.parametrize("module", sorted({*(n for n in TEMPLATE_FILES if n.endswith(".js")), *LITERT_MODULES}))
def test_page_module_is_short_and_has_no_module_level_mutable_state(module):
    text = (WEB / module).read_text()
    assert text.count("\n") <= MAX_LINES, f"{module}: {text.count(chr(10))} lines > {MAX_LINES}"
    assert not re.findall(r"^(?:let|var)\s", text, re.M), f"{module}: module-level let/var (page state belongs to main.js)"
    assert "innerHTML" not in text and "insertAdjacentHTML" not in text  # model text is data: textContent only
