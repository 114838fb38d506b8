"""What a first visit to a demo site will download, estimated before the site is built (issue 43, item 2): the page
precaches its models, so a 400 MB model makes a 400 MB first visit. Above ``EDGETOOL_DEMO_NOTICE_BYTES`` (default
100 MB) demo says so on stderr before it converts anything; the estimate is in the site report either way.

The estimate is the model's declared weight bytes (``parsers.declared_weights``: read, never loaded) once for the
TF.js float32 weights, plus each LiteRT.js build of ``--litert`` (fp32 the same again, int8 a quarter; ``--tflite``
its file's size). The page and its runtime (a few MB) are not in it; the measured figure follows the build.
"""

from __future__ import annotations

from pathlib import Path

from edge_tool.demo.config import DemoConfig
from edge_tool.demo.litert_site import litert_modes
from edge_tool.demo.model import ModelKind
from edge_tool.parsers.declared_weights import declared_weight_bytes
from edge_tool.parsers.limits import limit_from_env

NOTICE_ENV = "EDGETOOL_DEMO_NOTICE_BYTES"
NOTICE_BYTES = 100_000_000  # 100 MB: a first visit above it is said before the build
LITERT_SHARE = {"fp32": 1.0, "int8": 0.25}  # the weight bytes each --litert build holds, per float32 byte


def notice_bytes() -> int:
    """The first-visit size above which demo says it before building (``EDGETOOL_DEMO_NOTICE_BYTES``, 100 MB)."""
    return limit_from_env(NOTICE_ENV, NOTICE_BYTES)


def first_visit_estimate(cfg: DemoConfig, kind: ModelKind) -> int | None:
    """Bytes of model a first visit downloads, from what the model declares; None when it declares nothing
    readable (a tfjs graph model counts its weight files)."""
    model = Path(cfg.model)
    if kind is not ModelKind.SAVED_MODEL:
        return sum(p.stat().st_size for p in model.iterdir() if p.is_file()) if model.is_dir() else None
    weights = declared_weight_bytes(model)
    if weights is None:
        return None
    if not cfg.litert:
        return weights
    if cfg.tflite is not None:
        return weights + Path(cfg.tflite).stat().st_size
    return weights + int(sum(weights * LITERT_SHARE[m] for m in litert_modes(cfg)))


def download_notice(estimate: int | None, limit: int | None = None) -> str | None:
    """The one line demo prints before building when ``estimate`` is over the notice threshold, else None."""
    limit = notice_bytes() if limit is None else limit
    if estimate is None or estimate <= limit:
        return None
    return (
        f"note: a first visit to this demo site will download about {_size(estimate)} of model (estimated "
        f"from the weights the model declares; over {NOTICE_ENV}={limit:,}); the page caches it for offline use."
    )


def _size(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10_000_000 else f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"
