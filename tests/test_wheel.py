"""A wheel that works without Node: `python -m build` a copy of the checkout (never the checkout itself, whose stale
build/ would leak into the wheel), install the wheel into a fresh venv,
hide `node` from PATH, and run convert -> eval -> demo -> serve -> a headless page load in Chromium.

The fresh venv is made with ``python -m venv --without-pip``; the wheel is installed into it with this interpreter's
pip (``pip --python VENV install --no-deps``), and a .pth file appends this environment's site-packages to the
venv's path *after* its own, so TensorFlow and the rest resolve without downloading ~1.5 GB again while edgetool
itself can only come from the wheel (asserted: ``edge_tool.__file__`` lies in the venv, the cwd is outside the repo,
PYTHONPATH is cleared; a .pth path entry does not run the editable install's import hook in that site-packages).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.edgetool_runs import REPO
from tests.oracles.litert_outputs import litert_outputs
from tests.schema_check import validated
from tests.test_browser import CHROMIUM, FLAGS, _require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

VENDOR = (
    "edge_tool/web_demo/vendor/.lock-sha256",
    "edge_tool/web_demo/vendor/tf.min.js",
    "edge_tool/web_demo/vendor/tfjs-backend-wasm-simd.wasm",
    "edge_tool/web_demo/vendor/tfjs-backend-wasm-threaded-simd.wasm",
    "edge_tool/web_demo/vendor/tfjs-backend-wasm.wasm",
    "edge_tool/web_demo/vendor/tf-backend-wasm.min.js",
    "edge_tool/web_demo/vendor/litert/core.js",
    "edge_tool/web_demo/vendor/litert/litert_wasm_compat_internal.wasm",
    "edge_tool/web_demo/vendor/litert/litert_wasm_internal.wasm",
    "edge_tool/web_demo/vendor/litert/litert_wasm_threaded_internal.wasm",
    "edge_tool/nodejs/tfjs_run.js",
    "edge_tool/metadata/metadata_schema_py_generated.py",
    "edge_tool/schemas/manifest.schema.json",
    "edge_tool/schemas/eval.schema.json",
    "edge_tool/schemas/decision.schema.json",
)


def _copy_checkout(dest: Path, with_vendor: bool) -> Path:
    """The files git tracks (and new untracked ones), plus web_demo/vendor/ resolved (it may be a symlink)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        src = REPO / rel
        if rel.startswith(("web_demo/vendor", "web_demo/node_modules")) or not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    if with_vendor:
        shutil.copytree(REPO / "web_demo" / "vendor", dest / "web_demo" / "vendor", symlinks=False)
    return dest


def _build(src: Path, out: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=src,
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """`python -m build` of a copy of the checkout: the sdist, and the wheel built from that sdist."""
    tmp = tmp_path_factory.mktemp("wheel")
    proc = _build(_copy_checkout(tmp / "src", with_vendor=True), tmp / "dist")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / "dist"


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    [whl] = dist.glob("edgetool-*.whl")
    print(f"wheel {whl.name}: {whl.stat().st_size / 1e6:.2f} MB")
    return whl


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(root / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]  # a venv sharing another's packages lists both
    (Path(site) / "zz_edgetool_test_deps.pth").write_text("\n".join(deps) + "\n")
    return root


def _env(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = str(venv / "bin")  # no node, no npm
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def _run(venv: Path, cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / "edgetool"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(venv),
        cwd=cwd,
    )


def test_wheel_carries_the_vendored_runtimes(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert all(n in names for n in VENDOR), [n for n in VENDOR if n not in names]
    assert not any("node_modules" in n or n.startswith(("tests/", "build_support/")) for n in names)


def test_wheel_is_one_package_with_calibration_and_the_template_inside(wheel):
    """One top-level import name (the generic ``calibration`` and ``web_demo`` would clash with other
    distributions): both are inside edge_tool, calibration whole, and the console script is edgetool."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "edge_tool/cli.py",
        "edge_tool/convert/modes/int8.py",
        "edge_tool/calibration/__init__.py",
        "edge_tool/calibration/readers/images.py",
        "edge_tool/web_demo/index.html",
        "edge_tool/web_demo/app.js",
        "edge_tool/web_demo/sw.template.js",
        "edge_tool/web_demo/package-lock.json",
    ):
        assert required in names, required
    assert {n.split("/")[0] for n in names} == {"edge_tool", wheel.name.split("-py3")[0] + ".dist-info"}
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "edgetool = edge_tool.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def _tracked(folder: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", folder],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    return [rel for rel in listed.decode().split("\0") if rel and (REPO / rel).is_file()]


def test_sdist_keeps_the_repository_layout_and_the_wheel_holds_it_inside_edge_tool(dist, wheel):
    """The sdist has calibration/ and web_demo/ where the repository has them (nothing under edge_tool/ for them, no
    link); the wheel built from it holds exactly their files (git's, plus web_demo/vendor/), byte for byte, as
    edge_tool/calibration/ and edge_tool/web_demo/ (pyproject's package-dir)."""
    [sdist] = dist.glob("edgetool-*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name}
    assert not [n for n, m in members.items() if not (m.isfile() or m.isdir())]  # no symlink, no device
    for required in ("setup.py", "calibration/readers/images.py", "web_demo/index.html", "web_demo/vendor/tf.min.js"):
        assert required in members, required
    assert not [n for n in members if n.startswith(("edge_tool/calibration", "edge_tool/web_demo", "web_demo/node_"))]
    expected = {rel: (REPO / rel).read_bytes() for rel in _tracked("calibration") + _tracked("web_demo")}
    expected |= {str(p.relative_to(REPO)): p.read_bytes() for p in (REPO / "web_demo/vendor").rglob("*") if p.is_file()}
    with zipfile.ZipFile(wheel) as whl:
        shipped = {n.removeprefix("edge_tool/"): whl.read(n) for n in whl.namelist()}
    shipped = {n: data for n, data in shipped.items() if n.startswith(("calibration/", "web_demo/"))}
    assert sorted(shipped) == sorted(expected)
    assert [n for n in expected if shipped[n] != expected[n]] == []


def test_installed_wheel_claims_only_the_edge_tool_import_name(venv, tmp_path):
    """calibration and the page template are installed as edge_tool.calibration and edge_tool.web_demo: the generic
    top-level names stay free for other distributions, and `import edge_tool` still loads no third-party module."""
    site = Path(_python(venv, tmp_path, "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    assert not (site / "calibration").exists() and not (site / "web_demo").exists()
    for name in ("calibration", "web_demo"):
        proc = _python(venv, tmp_path, f"import {name}", check=False)
        assert proc.returncode == 1 and f"No module named '{name}'" in proc.stderr, proc.stderr[-2000:]
    probe = (
        "import sys, edge_tool, edge_tool.calibration as c\n"
        "from edge_tool.demo.vendor import vendor_status, web_demo_dir\n"
        "assert c.InputSpec.__module__ == 'edge_tool.calibration.spec'\n"
        "assert vendor_status(web_demo_dir()) is None, vendor_status(web_demo_dir())\n"
        "print(web_demo_dir())"
    )
    assert Path(_python(venv, tmp_path, probe).stdout.strip()).is_relative_to(site)
    loaded = _python(venv, tmp_path, "import sys, edge_tool; print(' '.join(sys.modules))").stdout.split()
    ours = {*sys.stdlib_module_names, "__main__", "edge_tool"}
    assert [m for m in loaded if m.split(".")[0] not in ours] == []
    proc = _run(venv, tmp_path, "--help")
    assert proc.returncode == 0 and "convert" in proc.stdout, proc.stdout + proc.stderr


def _python(venv: Path, cwd: Path, code: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=_env(venv), cwd=cwd, check=check
    )


def test_build_fails_loudly_without_vendor(tmp_path):
    proc = _build(_copy_checkout(tmp_path / "src", with_vendor=False), tmp_path / "dist")
    assert proc.returncode != 0
    assert "refusing to build without the vendored browser runtimes" in proc.stdout + proc.stderr
    assert not list((tmp_path / "dist").glob("*.whl")) if (tmp_path / "dist").exists() else True


def test_installed_wheel_works_without_node(venv, digits_model, tmp_path):
    assert shutil.which("node", path=_env(venv)["PATH"]) is None
    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import edge_tool.calibration, edge_tool.web_demo as w; print(edge_tool.calibration.__file__); "
            "print(w.__file__)",
        ],
        capture_output=True,
        text=True,
        env=_env(venv),
        cwd=tmp_path,
        check=True,
    )
    for line in probe.stdout.split():
        assert Path(line).resolve().is_relative_to(venv.resolve()), line

    out = tmp_path / "out"
    proc = _run(venv, tmp_path, "convert", digits_model, "--quant", "fp32,int8", "--format", "all", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    report = tmp_path / "eval.json"
    proc = _run(
        venv,
        tmp_path,
        "eval",
        out / "model_fp32.tflite",
        out / "model_int8.tflite",
        out / "tfjs",
        "--reference",
        digits_model,
        "--data",
        digits_model / "eval.npz",
        "--runs",
        "5",
        "--json",
        report,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = validated(report, "eval")  # eval read manifest.json through the schema shipped in the wheel
    assert [r["quant"] for r in doc["results"]] == ["fp32", "int8"]
    assert [r["format"] for r in doc["results"]] == ["tflite", "tflite"]
    assert any("Skipped tfjs" in n and "Node.js" in n for n in doc["notes"])
    assert "Skipped tfjs" in " ".join(proc.stdout.split())

    site = tmp_path / "site"
    proc = _run(venv, tmp_path, "demo", out / "tfjs", "-o", site)  # labels come from model.json
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _page_predicts_like_litert(venv, tmp_path, site, out / "model_fp32.tflite", digits_model)


def _page_predicts_like_litert(venv: Path, cwd: Path, site: Path, tflite: Path, model: Path) -> None:
    _require_chromium()
    from playwright.sync_api import sync_playwright

    server = subprocess.Popen(
        [str(venv / "bin" / "edgetool"), "serve", str(site), "--port", "0"],
        cwd=cwd,
        env=_env(venv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert " at http://127.0.0.1:" in line, line + (server.stderr.read() if server.poll() is not None else "")
        url = line.split(" at ")[1].split()[0]
        labels = (model / "labels.txt").read_text().split()
        x = np.load(model / "eval.npz")["x"][:8].astype(np.float32)
        expected = [labels[i] for i in litert_outputs(tflite, x).argmax(axis=1)]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
            page = browser.new_page()
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url)
            page.evaluate("window.edgetool.ready")
            got = [
                page.evaluate(
                    "([v, s]) => window.edgetool.predict(v, s).then(r => r.top[0].label)",
                    [sample.ravel().tolist(), [1, *sample.shape]],
                )
                for sample in x
            ]
            browser.close()
        assert got == expected
        origin = url.rstrip("/")
        foreign = [u for u in requests if not u.removeprefix("blob:").startswith(origin + "/")]
        assert requests and not foreign, f"requests left {origin}: {foreign[:5]}"
    finally:
        server.terminate()
        server.wait(10)
