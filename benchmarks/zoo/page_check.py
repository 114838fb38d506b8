"""The demo cell's verdict: the site is complete, and in Chromium the page's ``predict()`` computes what the model
does — TF's outputs for a TensorFlow.js page; for a LiteRT.js site each of its .tflite engines pinned with
``?engine=``, against that file in native LiteRT (and the fp32 one against TF)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.zoo.browser import predict_in_browser, predict_per_engine
from benchmarks.zoo.context import Context, primary
from benchmarks.zoo.oracles import run_tflite
from benchmarks.zoo.verdicts import TFJS_ATOL, close_to_reference, ok, wrong

# a LiteRT.js page against native LiteRT on one int8 file: the same integer kernels (wasm vs x86 XNNPACK), whose
# requantization may round differently by an output step (1/256 for a softmax), so two steps (BERT-tiny: equal)
LITERT_PAGE_INT8_ATOL = 2 / 256


def check_demo(ctx: Context, out: Path, browser: bool) -> dict:
    """demo: a site with config, model and service worker; with ``browser``, predict() matches TF in Chromium."""
    site = Path(out) / "site"
    needed = ["index.html", "demo-config.json", "sw.js"]
    missing = [n for n in needed if not (site / n).is_file()]
    if not (site / "model" / "model.json").is_file() and not any(site.rglob("*.tflite")):
        missing.append("model/model.json or a .tflite (LiteRT.js)")
    if missing:
        return wrong(f"site lacks {missing}")
    if not browser:
        return ok("site written (browser check off)")

    n = 4
    lite = json.loads((site / "demo-config.json").read_text()).get("litert")
    if lite:
        return _check_litert_site(ctx, site, lite, n)
    got = predict_in_browser(site, {k: v[:n] for k, v in ctx.inputs.items()})
    ref = {k: v[:n] for k, v in ctx.reference.items()}
    if "__probabilities__" in got:  # a page whose predict() returns only the ranked head's probabilities
        head = primary(ref)
        ref, got = {head: ref[head]}, {head: got["__probabilities__"]}
    return close_to_reference(
        ref, got, ctx.y[:n], ctx.spec.task, "page's predict() differs from TF", "predict() in Chromium matches TF"
    )


def _check_litert_site(ctx: Context, site: Path, lite: dict, n: int) -> dict:
    """A LiteRT.js site: the page picks the fastest of its .tflite engines (int8 or fp32), so each is pinned with
    ?engine= and compared with its own file in native LiteRT; the fp32 engine also with TF."""
    models = {"litert": lite, **{v["name"]: v for v in lite.get("variants", [])}}
    inputs = {k: v[:n] for k, v in ctx.inputs.items()}
    pages = predict_per_engine(site, inputs, list(models))
    ref = {k: v[:n] for k, v in ctx.reference.items()}
    checked = []
    for engine, model in models.items():
        file = site / model["modelUrl"]
        float_file = "fp32" in file.name  # the site names its files model-<mode>-b1.tflite
        native = run_tflite(ctx, file, inputs)
        if "error" in native:
            return wrong(f"{file.name}: {native['error']}")
        verdict = close_to_reference(
            native,
            pages[engine],
            ctx.y[:n],
            ctx.spec.task,
            f"page's predict() with ?engine={engine} differs from {file.name} in native LiteRT",
            atol=TFJS_ATOL if float_file else LITERT_PAGE_INT8_ATOL,
        )
        if verdict["status"] == "ok" and float_file:
            verdict = close_to_reference(
                ref, pages[engine], ctx.y[:n], ctx.spec.task, f"page's predict() with {file.name} differs from TF"
            )
        if verdict["status"] != "ok":
            return verdict
        checked.append(f"{engine} ({file.name})")
    return ok(f"predict() in Chromium matches native LiteRT for {', '.join(checked)}, and TF for fp32")
