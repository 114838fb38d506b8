"""The LM rows' own table (``eval --task lm``): perplexity and its drift, KL, agreement, |Δlogit| at prefill and at
decode positions, greedy / seeded continuation matches, TTFT per prefill length, decode tokens/s at short and
near-full context, load time and memory; shared by the terminal, Markdown and HTML reports."""

from __future__ import annotations

from edge_tool.core.textsafe import html_text, md_row

LM_HEADERS = [
    "artifact",
    "ppl",
    "bits/byte",
    "ppl drift",
    "mean KL",
    "agree",
    "|Δlogit| prefill",
    "|Δlogit| decode",
    "greedy",
    "seeded",
    "TTFT ms",
    "decode tok/s short / full",
    "load ms",
    "model+cache",
    "peak RSS (runner)",
]


def is_lm(report) -> bool:
    """True for an ``eval --task lm`` report."""
    return (report.task or {}).get("name") == "lm"


def _g(v, fmt: str = ".3g") -> str:
    return "—" if v is None else format(v, fmt)


def _match(m: dict | None) -> str:
    if not m:
        return "—"
    return f"{m['exact']}/{m['prompts']} (prefix {_g(m['mean_prefix'], '.1f')}/{_g(m['mean_length'], '.1f')})"


def _speed(m: dict) -> tuple[str, str]:
    ttft = ", ".join(f"{t}: {v['median']:.3g}" for t, v in (m.get("ttft_ms") or {}).items()) or "—"
    short, full = m.get("decode_short"), m.get("decode_full")
    tps = "—" if not short else f"{short['tokens_per_s']:.0f} / {full['tokens_per_s']:.0f}"
    return ttft, tps


def _row(label: str, m: dict | None, d: dict | None, rss: float | None = None) -> list[str]:
    m, d = m or {}, d or {}
    ttft, tps = _speed(m)
    mem = m.get("memory") or {}
    total = mem.get("total_bytes", (mem.get("model_bytes") or 0) + (mem.get("cache_bytes") or 0))
    drift = d.get("perplexity_drift")
    return [
        label,
        _g(m.get("perplexity"), ".5g"),
        _g(m.get("bits_per_byte"), ".4g"),
        "—" if drift is None else f"{100 * drift:+.3f} %",
        _g(d.get("mean_kl")),
        "—" if d.get("next_token_agreement") is None else f"{100 * d['next_token_agreement']:.1f} %",
        _g(d.get("max_abs_logit_prefill")),
        _g(d.get("max_abs_logit_decode")),
        _match(m.get("greedy")),
        _match(m.get("seeded")),
        ttft,
        tps,
        _g(m.get("load_ms"), ".1f"),
        f"{total / 1e6:.2f} MB" if total else "—",
        "—" if rss is None else f"{rss:.0f} MB",
    ]


def lm_rows(report) -> list[list[str]]:
    """The LM table's rows: the reference, then each artefact (a device row says where it ran)."""
    rows = [_row(f"{report.reference.path} (reference)", report.reference.metrics, None)]
    for r in report.results:
        where = f" @ {r.device['url']}" if r.device else ""
        row = _row(r.artifact + where, r.metrics, r.drift, r.peak_rss_mb)
        rows.append(row if not r.failed else [r.artifact + where, "✗"])
    return rows


def lm_footer(report) -> list[str]:
    """The footer lines of an LM report: the text, how timings were taken, the machine."""
    s, m = report.settings, report.machine
    lm = s.get("lm") or {}
    return [
        f"Text: {report.data.get('summary')}; perplexity = exp(mean next-token NLL) per token "
        "(edge_tool.lm.measure.perplexity); bits/byte = the same NLL in bits per UTF-8 byte of the scored text "
        "(comparable across tokenizers).",
        f"Timing: {s['threads']} thread(s), {lm.get('warmup')} warm-up calls; TTFT = prefill of T tokens from empty "
        f"caches + argmax ({lm.get('reps')} runs per T, median ms); decode tok/s = 1000 / median step ms over "
        f"{lm.get('steps')} greedy steps (call + argmax, cache fed back) from the shortest prefill's position "
        "(short) and over the last positions before max_len (full); p50/p99 ms columns: the short-context step.",
        f"Continuations: {lm.get('new_tokens')} new tokens per prompt; greedy = argmax; seeded = temperature "
        f"{lm.get('temperature')}, top-k {lm.get('top_k')}, seed {lm.get('seed')} + prompt index "
        "(xorshift32, the same noise in every runtime).",
        f"Machine: {m.get('cpu')} ({m.get('cores_logical')} logical cores), Python {m.get('python')}, "
        f"TensorFlow {m.get('tensorflow')}, LiteRT {m.get('litert')}.",
    ]


def lm_markdown(report) -> list[str]:
    """The LM table as Markdown lines (under its own heading)."""
    lines = ["", "### Language model", "", md_row(LM_HEADERS), "|---" * len(LM_HEADERS) + "|"]  # escaped: |Δlogit|
    return lines + [md_row(row + [""] * (len(LM_HEADERS) - len(row))) for row in lm_rows(report)]


def lm_html(report) -> str:
    """The LM table as HTML."""
    head = "".join(f"<th>{html_text(h)}</th>" for h in LM_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in lm_rows(report))
    return f"<h2>Language model</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
