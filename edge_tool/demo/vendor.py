"""Vendor the pinned TensorFlow.js (and LiteRT.js) runtimes into ``web_demo/vendor/`` so demo sites never touch a CDN.

``ensure_vendored`` (run by ``python scripts/vendor_runtimes.py``, which scripts/setup.sh calls) runs ``npm ci`` in
web_demo/ (only when the vendored files are missing or package-lock.json changed since they were copied) and copies
the dist files the page loads. The rest reads what was vendored, for ``demo``, ``eval``, ``check`` and the build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from edge_tool.core.visible import visible
from edge_tool.core.webdemo import web_demo_dir
from edge_tool.errors import UsageError

VENDOR_COMMAND = "python scripts/vendor_runtimes.py"
STAMP = ".lock-sha256"

# site file name -> path under web_demo/node_modules
VENDOR_FILES: dict[str, str] = {
    "tf.min.js": "@tensorflow/tfjs/dist/tf.min.js",
    "tf-backend-wasm.min.js": "@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js",
    "tf-backend-webgpu.min.js": "@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js",
    "tfjs-backend-wasm.wasm": "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm",
    "tfjs-backend-wasm-simd.wasm": "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm",
    "tfjs-backend-wasm-threaded-simd.wasm": "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm",
}
PACKAGES = ("@tensorflow/tfjs", "@tensorflow/tfjs-backend-wasm", "@tensorflow/tfjs-backend-webgpu")
# LiteRT.js (``edgetool demo --litert`` only): its ES modules (import-mapped by the page) and the wasm builds the page
# chooses from (web_demo/engines/litert-build.js; measured by benchmarks/bench_litertjs.py): "compat" (SIMD128 only,
# runs everywhere, the fallback), "default" (relaxed SIMD: faster kernels) and "threaded" (relaxed SIMD + a wasm
# thread pool; cross-origin isolated pages asking for more than one thread). The page loads its build by file name,
# so it never fetches the others; JSPI is not vendored (only needed for WebNN/WebGPU partitioning, and not faster).
LITERT_SUBDIR = "litert"
LITERT_BUILDS: dict[str, str] = {  # build name -> its .js loader (the .wasm beside it has the same stem)
    "compat": "litert_wasm_compat_internal.js",
    "default": "litert_wasm_internal.js",
    "threaded": "litert_wasm_threaded_internal.js",
}
LITERT_FILES: dict[str, str] = {
    f"{LITERT_SUBDIR}/core.js": "@litertjs/core/dist/index.js",
    f"{LITERT_SUBDIR}/wasm-utils.js": "@litertjs/wasm-utils/dist/index.js",
    **{
        f"{LITERT_SUBDIR}/{name}": f"@litertjs/core/wasm/{name}"
        for script in LITERT_BUILDS.values()
        for name in (script, script.removesuffix(".js") + ".wasm")
    },
}
LITERT_PACKAGES = ("@litertjs/core", "@litertjs/wasm-utils")
# Alternatives of which a browser runs one (site paths under vendor/): the service worker caches them when first
# fetched instead of precaching them all (sw.template.js), so a first visit downloads one of each group.
ON_DEMAND_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "tfjs wasm binary": tuple((name,) for name in VENDOR_FILES if name.endswith(".wasm")),
    "LiteRT.js wasm build": tuple(
        (f"{LITERT_SUBDIR}/{script}", f"{LITERT_SUBDIR}/{script.removesuffix('.js')}.wasm")
        for script in LITERT_BUILDS.values()
    ),
}
ALL_FILES = {**VENDOR_FILES, **LITERT_FILES}


def _lock_digest(root: Path) -> str:
    lock = root / "package-lock.json"
    if not lock.is_file():
        raise UsageError(f"{lock} is missing; the tfjs runtime versions are pinned there (restore it from git).")
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def pinned_versions(root: Path | None = None) -> dict[str, str]:
    """Exact npm versions pinned in web_demo/package.json, e.g. {'@tensorflow/tfjs': '4.22.0'}."""
    root = root or web_demo_dir()
    deps = json.loads((root / "package.json").read_text())["dependencies"]
    return {name: deps[name] for name in PACKAGES}


def pinned_litert_versions(root: Path | None = None) -> dict[str, str]:
    """Exact npm versions of LiteRT.js pinned in web_demo/package.json, e.g. {'@litertjs/core': '2.5.3', ...}."""
    root = root or web_demo_dir()
    deps = json.loads((root / "package.json").read_text())["dependencies"]
    return {name: deps[name] for name in LITERT_PACKAGES}


def vendor_status(root: Path | None = None) -> str | None:
    """None when web_demo/vendor/ holds every runtime file for the current lockfile, else what is wrong."""
    root = root or web_demo_dir()
    vendor = root / "vendor"
    missing = [name for name in ALL_FILES if not (vendor / name).is_file()]
    if missing:
        return f"{vendor} lacks {', '.join(missing)}"
    stamp = vendor / STAMP
    if not stamp.is_file() or stamp.read_text().strip() != _lock_digest(root):
        return f"{vendor} was vendored from a different web_demo/package-lock.json"
    return None


def vendored_files(root: Path | None = None) -> dict[str, Path]:
    """Site file name -> vendored path; UsageError naming the command to run when they are missing or stale."""
    root = root or web_demo_dir()
    problem = vendor_status(root)
    if problem:
        raise UsageError(
            f"The TensorFlow.js runtime is not vendored ({problem}). Run `{VENDOR_COMMAND}` "
            f"(scripts/setup.sh does it; needs node + npm) and try again."
        )
    return {name: root / "vendor" / name for name in VENDOR_FILES}


def vendored_litert_files(root: Path | None = None) -> dict[str, Path]:
    """Site path under vendor/ ('litert/core.js', ...) -> vendored LiteRT.js file; UsageError like vendored_files."""
    root = root or web_demo_dir()
    vendored_files(root)
    return {name: root / "vendor" / name for name in LITERT_FILES}


def _npm_ci(root: Path, quiet: bool) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise UsageError("npm is not on PATH; install Node.js 20+ (with npm) to vendor the tfjs runtime.")
    cmd = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
    if quiet:
        cmd.append("--loglevel=error")
    proc = subprocess.run(cmd, cwd=root, capture_output=quiet, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout or "")[-2000:] if quiet else ""
        raise UsageError(f"`npm ci` in {root} failed (exit {proc.returncode}).\n{detail}".rstrip())


def _check_installed(root: Path) -> None:
    for name, version in {**pinned_versions(root), **pinned_litert_versions(root)}.items():
        meta = root / "node_modules" / name / "package.json"
        found = json.loads(meta.read_text()).get("version") if meta.is_file() else None
        if found != version:
            raise UsageError(f"{name} in {root}/node_modules is {found or 'missing'}; expected {version} after npm ci.")


def ensure_vendored(root: Path | None = None, quiet: bool = False) -> bool:
    """Vendor the runtime if missing or stale; return True when files were (re)copied."""
    root = root or web_demo_dir()
    if vendor_status(root) is None:
        if not quiet:
            print(visible(f"tfjs and LiteRT.js runtimes already vendored in {root / 'vendor'}"))
        return False
    node_modules = root / "node_modules"
    stamp = node_modules / ".edgetool-lock-sha256"
    digest = _lock_digest(root)
    have_sources = all((node_modules / src).is_file() for src in ALL_FILES.values())
    if not (have_sources and stamp.is_file() and stamp.read_text().strip() == digest):
        _npm_ci(root, quiet)
        stamp.write_text(digest + "\n")
    _check_installed(root)
    tmp = Path(tempfile.mkdtemp(prefix=".vendor.tmp-", dir=root))
    try:
        for name, src in ALL_FILES.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(node_modules / src, tmp / name)
        (tmp / STAMP).write_text(digest + "\n")
        for sub in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            os.chmod(sub, 0o755)
        old = root / "vendor"
        if old.exists():
            shutil.rmtree(old)
        os.replace(tmp, old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if not quiet:
        versions = ", ".join(f"{k}@{v}" for k, v in {**pinned_versions(root), **pinned_litert_versions(root)}.items())
        print(visible(f"vendored {versions} into {root / 'vendor'}"))
    return True
