"""``eval --task lm`` on a board: one runner per artefact (a fresh process: its peak RSS is the model's run), the LM
loaded under the runner's ``lm`` program (``board_lm``), one ``lm`` request, and its answer checked as hostile input
(bounded frames, the logits' dtype and shape, every continuation token inside the vocabulary, every timing a
finite non-negative integer, lists no longer than asked). Every fault is a ``RuntimeFailure``: the row's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_tool.device import answers
from edge_tool.device.answers import BadAnswer
from edge_tool.device.facts import missing_runtime, runtime_usable
from edge_tool.device.runtime_refusal import BoardRefusedModel, explain
from edge_tool.device.session import RunnerSession, model_bytes, sweep
from edge_tool.device.transport import SshDevice
from edge_tool.device.url import DeviceURL
from edge_tool.errors import RuntimeFailure

MAX_TIMED = 100_000  # timed calls in one list of the answer
PROGRAM = "lm"  # the runner's program for LMs (board_lm; board_model._programs serves it)


def _bad(what: str, value, expected: str) -> BadAnswer:
    shown = answers.text(repr(value), 80)
    return BadAnswer(f"the device answered {what} = {shown}: expected {expected}")


def _arrays_check(n: int, vocab: int):
    def check(specs: list) -> None:
        got = {name: (dtype, shape) for name, dtype, shape in specs}
        want = {"logits": (np.dtype(np.float32), (n, vocab)), "decode": (np.dtype(np.bool_), (n,))}
        if got != want:
            raise _bad("the LM arrays", {k: (str(d), list(s)) for k, (d, s) in got.items()}, f"{want}")

    return check


def _tokens(lists, what: str, prompts: int, most: int, vocab: int) -> list:
    ok = isinstance(lists, list) and len(lists) == prompts
    ok = ok and all(isinstance(x, list) and len(x) <= most for x in lists)
    ok = ok and all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab for x in lists for t in x)
    if not ok:
        raise _bad(what, lists, f"{prompts} lists of at most {most} token ids in 0..{vocab - 1}")
    return lists


def _times(v, what: str) -> list:
    ok = isinstance(v, list) and 0 < len(v) <= MAX_TIMED
    if not ok or not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 1 << 62 for t in v):
        raise _bad(what, v, f"1..{MAX_TIMED} durations, each an integer >= 0 nanoseconds")
    return v


def _timed(t, lengths: tuple[int, ...]) -> dict:
    if not isinstance(t, dict) or not isinstance(t.get("ttft_ns"), dict):
        raise _bad("timed", t, "{ttft_ns: {length: [ns…]}, decode_short_ns, decode_full_ns, positions}")
    if sorted(t["ttft_ns"]) != sorted(str(x) for x in lengths):
        raise _bad("the TTFT lengths", list(t["ttft_ns"]), f"{[str(x) for x in lengths]}")
    pos = t.get("positions")
    if not isinstance(pos, list) or len(pos) != 2 or not all(isinstance(p, int) and 0 <= p < 1 << 31 for p in pos):
        raise _bad("positions", pos, "[short, full] positions")
    return {
        "ttft_ns": {k: _times(v, f"ttft_ns[{k}]") for k, v in t["ttft_ns"].items()},
        "decode_short_ns": _times(t.get("decode_short_ns"), "decode_short_ns"),
        "decode_full_ns": _times(t.get("decode_full_ns"), "decode_full_ns"),
        "positions": pos,
    }


def checked_answer(h: dict, arrays: dict, prompts: int, req: dict, lengths: tuple[int, ...], vocab: int) -> dict:
    """The raw LM run (``measure.lm_run``'s keys) of a board's ``lm`` answer, every field checked."""
    if h.get("lm") is not True:
        raise _bad("instead of an LM run", h, "{lm: true, greedy, seeded, timed, load_ms, …}")
    most = int(req["new_tokens"])
    raw = {
        "logits": arrays["logits"],
        "decode": arrays["decode"],
        "greedy": _tokens(h.get("greedy"), "greedy", prompts, most, vocab),
        "seeded": _tokens(h.get("seeded"), "seeded", prompts, most, vocab),
        "load_ms": answers.field(h, "load_ms", "number"),
        "cold_start_ms": answers.field(h, "cold_start_ms", "number"),
        "peak_rss_mb": answers.field(h, "peak_rss_mb", "number"),
    }
    if not np.all(np.isfinite(raw["logits"])):
        raise _bad("logits", "non-finite values", "finite logits")
    if req.get("timing"):
        raw["timed"] = _timed(h.get("timed"), lengths)
    return raw


def lm_on_board(url: DeviceURL, path: Path, load: dict, ids, prompts, req: dict, n: int) -> tuple[dict, dict]:
    """(the board's hello, its checked LM run) of the .tflite ``path``; ``load`` carries the contract's facts and
    threads, ``n`` is the number of teacher-forced positions expected. RuntimeFailure on any fault."""
    device = SshDevice(url)
    try:
        device.open()
        session = RunnerSession(device)
        try:
            hello = session.hello[0]
            if not runtime_usable(hello):
                raise RuntimeFailure(missing_runtime(hello, url.python))
            session.send({"op": "load", "runtime": PROGRAM, **load}, blob=model_bytes(path))
            _load(session, hello, f"loading {path.name} on {url.name}")
            arrays = {
                "ids": np.asarray(ids, np.int32),
                **{f"p{i}": np.asarray(p, np.int32) for i, p in enumerate(prompts)},
            }
            session.send({"op": "lm", "prompts": len(prompts), **req}, arrays)
            vocab, lengths = int(load["vocab_size"]), tuple(load["prefill_lengths"])
            try:
                h, got = session.receive(
                    lambda h: h, _arrays_check(n, vocab), activity=f"LM run of {path.name} on {url.name}"
                )
            except RuntimeFailure:
                if session.died and device.alive:
                    session.close(abort=True)
                    sweep(device, session)
                raise
            answer = checked_answer(h, got, len(prompts), req, lengths, vocab)
        except BaseException:  # a stop signal or a fault mid-run: end the runner now, never wait on its answer
            session.close(abort=True)
            raise
        session.close()
        return hello, answer
    finally:
        device.close()


def _load(session: RunnerSession, hello: dict, activity: str) -> None:
    """The load's answer; BoardRefusedModel when the runtime refused the file (``runtime_refusal`` says why)."""
    try:
        session.receive(_ready, activity=activity)
    except BadAnswer:
        raise
    except RuntimeFailure as exc:
        if session.died:
            raise
        said = explain(str(exc), f"{hello.get('runtime')} {hello.get('runtime_version')}")
        raise BoardRefusedModel(said or str(exc)) from None


def _ready(h: dict) -> dict:
    if h.get("ready") is not True:
        raise _bad("instead of ready", h, "{ready: true, batching}")
    return {"ready": True, "batching": answers.field(h, "batching", "text", limit=100)}
