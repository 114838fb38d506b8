"""The self-contained HTML report: table, notes, inline SVG charts; no external scripts, styles or fonts."""

from __future__ import annotations

from edge_tool.core.textsafe import html_text
from edge_tool.evaluate.charts import LatencySeries, ParetoPoint, latency_plot, pareto_chart
from edge_tool.evaluate.report import NUMERIC, Report
from edge_tool.evaluate.task_charts import task_section

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1000px;color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.ref td{background:#f4f6f8;font-weight:600}
tr.fail td{background:#fdecea}
.chart{max-width:100%;height:auto}.chart .grid{stroke:#e5e5e5}.chart .tick{font-size:11px;fill:#555}
.chart .axis{font-size:12px;fill:#333}.chart .label{font-size:12px;fill:#222}
ul.notes li{margin:.2rem 0}code{font-size:12px}
table.confusion{width:auto}table.confusion td,table.confusion th{padding:.2rem .45rem}
"""


def _table(report: Report, failing: set[str]) -> str:
    head = "".join(f'<th class="{"num" if h in NUMERIC else ""}">{html_text(h)}</th>' for h in report.headers())
    rows = []
    for i, row in enumerate(report.table_rows()):
        cls = "ref" if i == 0 else ("fail" if row[0] in failing else "")
        cells = "".join(
            f'<td class="{"num" if h in NUMERIC else ""}">{html_text(c)}</td>' for h, c in zip(report.headers(), row)
        )
        rows.append(f'<tr class="{cls}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _drift_table(report: Report) -> str:
    with_topk = any(r.top_k_accuracy is not None for r in report.results)  # none with --top-k or fewer classes
    head = (
        "<tr><th>artifact</th>"
        + ("<th class=num>top-k acc.</th>" if with_topk else "")
        + "<th class=num>max abs err</th>"
        "<th class=num>mean abs err</th><th class=num>cosine</th><th class=num>cold start ms</th>"
        "<th class=num>peak RSS MB</th><th>runtime</th></tr>"
    )
    rows = []
    for r in report.results:
        cold = "—" if not r.latency or r.latency.cold_start is None else f"{r.latency.cold_start:.1f}"
        rss = "—" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.1f}"
        topk = "—" if r.top_k_accuracy is None else f"{100 * r.top_k_accuracy:.2f}%"
        topk = f"<td class=num>{topk}</td>" if with_topk else ""
        rows.append(
            f"<tr><td>{html_text(r.artifact)}</td>{topk}<td class=num>{_g(r.max_abs_error)}</td>"
            f"<td class=num>{_g(r.mean_abs_error)}</td><td class=num>{_g(r.cosine, '.6f')}</td>"
            f"<td class=num>{cold}</td><td class=num>{rss}</td><td>{html_text(r.runtime)}</td></tr>"
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _spread_table(report: Report) -> str:
    """Each --device row's outputs against the host row of the same artefact (device.spread): what differs across
    boards and runtime versions."""
    rows = [r for r in report.results if r.spread]
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{html_text(r.artifact)}</td><td>{html_text(r.runtime)}</td>"
        f"<td>{html_text(r.spread['against'])}</td>"
        f"<td class=num>{r.spread['samples_differing']} / {r.spread['samples']}</td>"
        f"<td class=num>{r.spread['top1_disagreements']}</td><td class=num>{_g(r.spread['max_abs_diff'])}</td>"
        f"<td class=num>{_g(r.spread['mean_abs_diff'])}</td><td class=num>{_g(r.spread['max_steps'], 'd')}</td></tr>"
        for r in rows
    )
    return (
        "<h2>Spread between devices</h2><p>Each device row's outputs against the host row of the same artefact, "
        "sample by sample: differences here come from the runtime version and the CPU's kernels, not from the "
        "model.</p><table><thead><tr><th>device row</th><th>runtime</th><th>against</th>"
        "<th class=num>samples differing</th><th class=num>top-1 disagreements</th><th class=num>max abs diff</th>"
        "<th class=num>mean abs diff</th><th class=num>max steps</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _g(v: float | None, fmt: str = ".3g") -> str:
    return "—" if v is None else format(v, fmt)


def _per_layer(report: Report) -> str:
    out = []
    for r in report.results:
        if not r.per_layer:
            continue
        rows = "".join(
            f"<tr><td>{html_text(e.op_name)}</td><td><code>{html_text(e.tensor_name)}</code></td>"
            f"<td class=num>{e.rmse_over_scale:.3f}</td><td class=num>{e.max_abs_error:.4g}</td></tr>"
            for e in r.per_layer
        )
        out.append(
            f"<h2>Worst quantized layers: {html_text(r.artifact)}</h2>"
            "<p>rmse/scale from tf.lite.experimental.QuantizationDebugger on an int8 model rebuilt from the "
            "reference with the eval data as representative dataset; ≈0.29 is pure rounding error, much "
            "larger values point at layers worth keeping in float.</p>"
            "<table><thead><tr><th>op</th><th>tensor</th><th class=num>rmse/scale</th>"
            f"<th class=num>max abs error</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(out)


def _quality(report: Report, main: str):
    """(reference value, axis label, row -> value) of the Pareto chart's quality axis: the task's main metric
    when measured, else agreement with the reference."""
    ref = report.reference
    if (report.task or {}).get("higher_is_better") is False:  # e.g. perplexity: the chart's axis is higher-better
        return 1.0, "agreement with reference", lambda r: r.top1_agreement
    if main != "accuracy" and ref.metrics and ref.metrics.get(main) is not None:
        return ref.metrics[main], main, lambda r: (r.metrics or {}).get(main)
    if ref.accuracy is not None:
        return ref.accuracy, "accuracy", lambda r: r.accuracy
    return 1.0, "top-1 agreement with reference", lambda r: r.top1_agreement


def render(report: Report, failing: set[str] | None = None) -> str:
    """The whole report as one HTML page (UTF-8, self-contained)."""
    failing = failing or set()
    ref = report.reference
    series = []
    if ref.latency:
        series.append(LatencySeries("reference (TensorFlow)", ref.latency.samples_ms))
    series += [
        LatencySeries(r.artifact + (" (tfjs, Node)" if r.format == "tfjs" else ""), r.latency.samples_ms)
        for r in report.results
        if r.latency
    ]
    main = (report.task or {}).get("main_metric", "accuracy")
    ref_q, quality_label, quality = _quality(report, main)
    points = []
    if ref.latency:
        points.append(ParetoPoint("reference", ref.latency.p50, ref_q, ref.size_bytes))
    points += [
        ParetoPoint(r.artifact, r.latency.p50, quality(r), r.size_bytes)
        for r in report.results
        if r.latency and quality(r) is not None
    ]
    notes = "".join(f"<li>{html_text(line.replace('`', ''))}</li>" for line in report.footer_lines())
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>edgetool eval: {html_text(ref.path)}</title><style>{CSS}</style></head><body>"
        f"<h1>edgetool eval</h1><p>Reference <code>{html_text(ref.path)}</code> against {len(report.results)} artefact(s).</p>"
        f"{_table(report, failing)}<ul class=notes>{notes}</ul>"
        f"<h2>Drift detail</h2>{_drift_table(report)}{_spread_table(report)}{task_section(report)}"
        "<h2>Latency distribution</h2><p>Box: quartiles; whiskers: p5–p95; black line: p50; dots: individual timed "
        "calls.</p>"
        + latency_plot(series)
        + "<h2>Size × accuracy × latency</h2><p>Bubble area is proportional to model size; black rings mark "
        "Pareto-optimal models (nothing else is faster, at least as accurate and smaller).</p>"
        + pareto_chart(points, quality_label)
        + _per_layer(report)
        + "</body></html>\n"
    )
