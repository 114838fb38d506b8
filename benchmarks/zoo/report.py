"""benchmarks/ZOO.md: the (model × cell) matrix, the counts, and every non-ok cell with its reason."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks._results import machine  # noqa: F401  (one machine line for every benchmark)
from benchmarks.zoo.cells import CELLS
from benchmarks.zoo.models import SPECS

TASK_METRIC = {
    "classification": "accuracy",
    "multilabel": "macro F1",
    "regression": "R²",
    "segmentation": "mIoU",
    "detection": "class accuracy",
    "embedding": "recall@1",
    "image": "PSNR dB",
    "heatmap": "PCK@0.1",
    "keypoints": "PCK@0.1 of the input",
}
SYMBOL = {
    "ok": "✅",
    "refused": "⛔",
    "unclear": "⚠️",
    "crashed": "💥",
    "wrong": "❌",
    "blocked": "⏭",
    "unchecked": "❔",
}
STATUSES = ("ok", "refused", "unclear", "crashed", "wrong", "blocked", "unchecked")


def counts(results: dict[tuple[str, str], dict]) -> Counter:
    """How many cells have each status."""
    return Counter(r["status"] for r in results.values())


def summary_line(results: dict[tuple[str, str], dict]) -> str:
    """'N cells: a ok, b refused, ...' (statuses that occur)."""
    c = counts(results)
    parts = [f"{c[s]} {s}" for s in STATUSES if c[s]]
    return f"{sum(c.values())} cells: " + ", ".join(parts)


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def render(results: dict[tuple[str, str], dict], meta: dict) -> str:
    """The whole ZOO.md text."""
    models = [m for m in SPECS if any((m, c) in results for c in CELLS)]
    lines = [
        f"# The model zoo: every edgetool cell on {len(models)} models users bring",
        "",
        "Written by `benchmarks/zoo.py` (how to run it and what each cell checks: [docs/zoo.md](../docs/zoo.md)).",
        f"edgetool source `{meta['tool_hash']}`, git `{meta['git']}`; {meta['machine']}; options detected from the "
        f"CLI: {meta['features']}.",
        "",
        f"**{summary_line(results)}.** " + " · ".join(f"{SYMBOL[s]} {s}" for s in STATUSES),
        "",
        "| model | " + " | ".join(CELLS) + " |",
        "|---|" + "|".join(":-:" for _ in CELLS) + "|",
    ]
    notes = []
    for m in models:
        row = []
        for c in CELLS:
            r = results.get((m, c))
            if r is None:
                row.append("·")
                continue
            mark = SYMBOL[r["status"]]
            if r["status"] != "ok":
                notes.append((m, c, r))
                mark += f"<sup>{len(notes)}</sup>"
            row.append(mark)
        lines.append(f"| `{m}` | " + " | ".join(row) + " |")
    lines += [
        "",
        "## Models",
        "",
        "| model | what it is | task | held-out metric (TF) | edgetool source of its cells |",
        "|---|---|---|---:|---|",
    ]
    for m in models:
        acc = meta["accuracy"].get(m)
        sources = sorted({r["source"] for (mm, _), r in results.items() if mm == m and r.get("source")})
        stale = [s for s in sources if s != meta["tool_hash"]]
        source = ", ".join(f"`{s}`" for s in sources) + (" (not this source or check code: rerun)" if stale else "")
        lines.append(
            f"| `{m}` | {_escape(SPECS[m].about)} | {SPECS[m].task} ({TASK_METRIC[SPECS[m].task]}) | "
            f"{'' if acc is None else f'{acc:.3f}'} | {source} |"
        )
    if meta.get("not_run"):
        lines += [
            "",
            f"Not run in this cache (no results to show): {', '.join(f'`{m}`' for m in meta['not_run'])}. "
            "Their last full run is in this file's git history.",
        ]
    lines += ["", "## Every cell that is not ok", ""]
    for i, (m, c, r) in enumerate(notes, 1):
        lines.append(f"{i}. **{m} × {c}** — {r['status']}: {_escape(r['reason'])}")
    if not notes:
        lines.append("None.")
    lines += ["", "## Time", "", f"CLI time summed over the cells shown: {meta['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def write(path: Path, results: dict[tuple[str, str], dict], meta: dict) -> None:
    """Write ZOO.md (via a temp file, renamed)."""
    tmp = Path(path).with_suffix(".md.tmp")
    tmp.write_text(render(results, meta))
    tmp.replace(path)
