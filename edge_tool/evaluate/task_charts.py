"""The HTML report's task section: each row's task metrics, and for classification the confusion matrix (a
shaded table) and per-class accuracy (inline SVG bars), both with the label names."""

from __future__ import annotations

from edge_tool.core.textsafe import html_text
from edge_tool.evaluate.charts import PALETTE
from edge_tool.evaluate.lm_report import lm_html

MAX_DRAWN_CLASSES = 40  # a larger matrix is unreadable on a page (the JSON keeps it up to 100 classes)


def task_section(report) -> str:
    """The task line, a metrics table (non-classification tasks) or the classification charts."""
    task = report.task or {}
    name = task.get("name", "classification")
    how = "given by --task" if task.get("given") else ("assumed" if task.get("assumed") else "inferred")
    head = (
        f"<h2>Task: {html_text(name)}</h2><p>{html_text(how)}: {html_text(task.get('reason', ''))}. "
        f"--max-drop gates <code>{html_text(task.get('main_metric', 'accuracy'))}</code>.</p>"
    )
    rows = [("reference", report.reference.metrics)] + [(r.artifact, r.metrics) for r in report.results]
    if name == "lm":
        return head + lm_html(report)
    if name != "classification":
        return head + _metrics_table(rows)
    drawn = [(label, m) for label, m in rows if m and m.get("confusion_matrix")]
    if not drawn:
        return head
    return head + per_class_chart(drawn) + "".join(confusion_table(label, m["confusion_matrix"]) for label, m in drawn)


def _metrics_table(rows: list[tuple[str, dict | None]]) -> str:
    keys = next((list(m) for _, m in rows if m), [])
    if not keys:
        return "<p>No task metrics (the data has no labels).</p>"
    head = "".join(f"<th class=num>{html_text(k)}</th>" for k in keys)
    body = "".join(
        f"<tr><td>{html_text(label)}</td>"
        + "".join(f"<td class=num>{_cell(None if not m else m.get(k))}</td>" for k in keys)
        + "</tr>"
        for label, m in rows
    )
    return f"<table><thead><tr><th>model</th>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, dict):
        return html_text("; ".join(f"{k}: {_cell(x)}" for k, x in v.items()))
    return f"{v:.4g}" if isinstance(v, float) else html_text(str(v))


def confusion_table(label: str, matrix: dict) -> str:
    """One model's confusion matrix (rows: true class, columns: predicted), cells shaded by row share."""
    names, counts = matrix["labels"], matrix["counts"]
    if len(names) > MAX_DRAWN_CLASSES:
        return f"<p>{html_text(label)}: {len(names)} classes, confusion matrix in the JSON only.</p>"
    head = "".join(f"<th class=num>{html_text(n)}</th>" for n in names)
    body = []
    for name, row in zip(names, counts):
        total = sum(row) or 1
        cells = "".join(f'<td class=num style="background:rgba(78,121,167,{c / total:.2f})">{c}</td>' for c in row)
        body.append(f"<tr><th>{html_text(name)}</th>{cells}</tr>")
    return (
        f"<h3>Confusion matrix: {html_text(label)}</h3><p>Rows: true class; columns: predicted class.</p>"
        f"<table class=confusion><thead><tr><th>true \\ predicted</th>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def per_class_chart(rows: list[tuple[str, dict]], width: int = 760) -> str:
    """Grouped horizontal bars: per-class accuracy of every model, classes labelled by name."""
    names = [c["label"] for c in rows[0][1]["per_class"]]
    if len(names) > MAX_DRAWN_CLASSES:
        return f"<p>{len(names)} classes: per-class accuracy in the JSON only.</p>"
    left, bar, gap, top = 160, 10, 8, 24
    group = bar * len(rows) + gap
    height = top + group * len(names) + 30
    scale = (width - left - 60) / 1.0
    parts = [
        f'<h3>Per-class accuracy</h3><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="per-class accuracy" class="chart">'
    ]
    for j, (label, _) in enumerate(rows):
        parts.append(
            f'<rect x="{left + 130 * j}" y="4" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>'
            f'<text x="{left + 14 + 130 * j}" y="13" class="tick">{html_text(label[:18])}</text>'
        )
    for i, name in enumerate(names):
        y0 = top + group * i
        parts.append(
            f'<text x="{left - 6}" y="{y0 + group / 2:.1f}" text-anchor="end" class="label">{html_text(name)}</text>'
        )
        for j, (label, m) in enumerate(rows):
            acc = m["per_class"][i]["accuracy"]
            w = 0 if acc is None else acc * scale
            shown = "—" if acc is None else f"{100 * acc:.1f}%"
            parts.append(
                f'<rect x="{left}" y="{y0 + bar * j}" width="{w:.1f}" height="{bar - 1}" '
                f'fill="{PALETTE[j % len(PALETTE)]}"><title>{html_text(label)} · {html_text(name)}: '
                f"{shown}</title></rect>"
                f'<text x="{left + w + 4:.1f}" y="{y0 + bar * j + bar - 2}" style="font-size:9px" '
                f'class="tick">{shown}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts)
