"""The model zoo: small but realistic models of the shapes users bring, each briefly trained on real or learnable data.

The list is ``specs.SPECS``; the builders, one per model, live in ``builders/`` by family (what each writes:
``builders/common.py``). Keras-2 models use tf_keras (``TF_USE_LEGACY_KERAS=1``); ``keras3_export`` uses Keras 3 and
``model.export()``. Build one model in a fresh process (Keras 2 and 3 cannot share one):
``python -m benchmarks.zoo.models NAME OUT``, or call :func:`build` which does that.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.zoo.builders import (
    attention,
    export,
    gpu,
    media,
    modern,
    origins,
    outputs,
    sequence,
    serving,
    tabular,
    tasks,
    vision,
)
from benchmarks.zoo.specs import SPECS

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FAMILIES = (vision, sequence, tabular, export, tasks, modern, media, attention, gpu, outputs, serving, origins)


def _builders() -> dict:
    """Model name -> its ``build_NAME`` function, found in the family modules."""
    found = {
        name: getattr(family, f"build_{name}")
        for family in FAMILIES
        for name in SPECS
        if hasattr(family, f"build_{name}")
    }
    if set(found) != set(SPECS):
        raise RuntimeError(
            f"zoo models without a builder in {[f.__name__ for f in FAMILIES]}: {sorted(set(SPECS) - set(found))}"
        )
    return found


BUILDERS = _builders()


def _source_files(name: str) -> list[Path]:
    """Every file the build of ``name`` depends on: the data, the shared builder code and its family's module."""
    family = Path(BUILDERS[name].__code__.co_filename)
    return [HERE / "data.py", HERE / "builders" / "common.py", family, REPO / "tests" / "oracles" / "task_metrics.py"]


def source_hash(name: str) -> str:
    """Hash of the files building ``name`` (:func:`_source_files`), its name and what its spec says about the build:
    a cached build is redone when any of them changes (and only then: another family's edit keeps it).

    (Whole files, not ``inspect.getsource``: a long run whose files are edited meanwhile would otherwise read shifted
    lines from linecache and disagree with a fresh process about which builds are current.)
    """
    spec = SPECS[name]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in _source_files(name)))
    digest.update(repr((name, spec.about, spec.keras3, spec.model_file, spec.extra_args)).encode())
    return digest.hexdigest()[:16]


def is_built(out: Path) -> bool:
    """True when ``out`` holds a complete build of the current source."""
    stamp = Path(out) / "zoo.json"
    if not stamp.is_file():
        return False
    info = json.loads(stamp.read_text())
    return info.get("name") in SPECS and info.get("source_hash") == source_hash(info["name"])


def build(name: str, out: Path, timeout: float = 900) -> dict:
    """Build model ``name`` into ``out`` (replaced) in a fresh Python process; return its zoo.json."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "TF_USE_LEGACY_KERAS": "0" if SPECS[name].keras3 else "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "CUDA_VISIBLE_DEVICES": "",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.zoo.models", name, str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building {name} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads((out / "zoo.json").read_text())


def _main(argv: list[str]) -> None:
    name, out = argv[0], Path(argv[1])
    start = time.perf_counter()
    info = BUILDERS[name](out)
    info["task"] = SPECS[name].task
    info.update(build_seconds=round(time.perf_counter() - start, 1), source_hash=source_hash(name))
    (out / "zoo.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info))


if __name__ == "__main__":
    _main(sys.argv[1:])
