"""The device side of ``eval --task lm --device``: a contract LM on the board's LiteRT signature runners, the caches
fed back call by call (sent with ``board_runner``; no edgetool import here either).

``runner_program.runner_source`` appends the host's own ``LmSession`` (edge_tool.lm.session), the shared sampler
(edge_tool.lm.sampling), ``generate.stream`` and the LM run of ``edge_tool.lm.measure`` to the runner, so the board
runs the very loop the host runs. The ``load`` request (runtime ``lm``) carries the contract's facts; an ``lm``
request the text's ids and the prompts as arrays; the answer is the teacher-forced logits and decode mask as
arrays, the continuations, timings, load and cold-start times and the runner's peak RSS in its header.
"""

from __future__ import annotations

DECODE = "decode"


class Sampler:
    """``edge_tool.lm.sampling.Sampler`` as the board builds it (positional temperature, top_k, seed)."""

    def __init__(self, temperature: float = 0.0, top_k: int = 0, seed: int = 0):
        self.temperature, self.top_k, self.seed = float(temperature), int(top_k), int(seed)


class BoardContract:
    """The LM contract's facts as the host read them from the artefact (``LmSession`` reads these)."""

    def __init__(self, req: dict):
        self.max_len = int(req["max_len"])
        self.prefill_lengths = tuple(int(t) for t in req["prefill_lengths"])
        self.prefill_keys = tuple(str(k) for k in req["prefill_keys"])
        self.num_layers, self.num_kv_heads = int(req["num_layers"]), int(req["num_kv_heads"])
        self.head_dim, self.vocab_size = int(req["head_dim"]), int(req["vocab_size"])
        self.cache_layout = str(req.get("cache_layout", "bshd"))
        self.spec = None

    def cache_shape(self) -> tuple:
        """One layer's K (or V) cache as the signatures take it (``LmContract.cache_shape``)."""
        if self.cache_layout == "bhsd":
            return (1, self.num_kv_heads, self.max_len, self.head_dim)
        return (1, self.max_len, self.num_kv_heads, self.head_dim)

    def prefill_key(self, length: int) -> str:
        """The signature key of the prefill of ``length`` tokens."""
        return self.prefill_keys[self.prefill_lengths.index(length)]


class BoardLm:
    """One contract .tflite on the device's runtime: signature runners, timed load, the LM run."""

    def __init__(self, cls, path: str, req: dict):
        import time as _time

        t0 = _time.perf_counter()
        self.interp = cls(model_path=path, num_threads=int(req["threads"]))
        self.contract = BoardContract(req)
        keys = (DECODE,) + self.contract.prefill_keys
        have = self.interp.get_signature_list()
        missing = [k for k in keys if k not in have]
        if missing:
            raise ValueError(
                "the model has no signature %s (it has %s)" % (", ".join(missing), ", ".join(sorted(have)))
            )
        runners = {k: self.interp.get_signature_runner(k) for k in keys}
        self.session = LmSession(lambda key, feeds: runners[key](**feeds), self.contract)
        self.session.pad_id = int(req.get("pad_id", 0))
        loaded = _time.perf_counter()
        self.session.decode(0)
        self.load_ms = (loaded - t0) * 1e3
        self.cold_ms = (_time.perf_counter() - t0) * 1e3

    def describe(self) -> str:
        """How the run goes (the ready answer's ``batching``)."""
        return "one sequence, caches fed back"

    def lm(self, req: dict, arrays: dict) -> tuple:
        """(header, arrays) of the ``lm`` answer: ``lm_run`` on ``arrays['ids']`` and the prompts p0, p1, …"""
        import numpy as np

        ids = [int(t) for t in arrays["ids"]]
        prompts = [[int(t) for t in arrays["p%d" % i]] for i in range(int(req["prompts"]))]
        raw = lm_run(self.session, ids, prompts, req)
        header = {
            "lm": True,
            "greedy": raw["greedy"],
            "seeded": raw["seeded"],
            "timed": raw.get("timed"),
            "load_ms": self.load_ms,
            "cold_start_ms": self.cold_ms,
            "peak_rss_mb": peak_rss_mb(),
        }
        logits = np.ascontiguousarray(raw["logits"], np.float32)
        return header, {"logits": logits, "decode": np.asarray(raw["decode"], np.bool_)}


def lm_load(cls, path: str, req: dict) -> tuple:
    """(model, ready answer) of an LM on the board's LiteRT."""
    if cls is None:
        raise RuntimeError("no TFLite runtime on the device")
    model = BoardLm(cls, path, req)
    return model, {"ready": True, "inputs": [], "outputs": [], "batching": model.describe()}


def lm_latency(path: str, req: dict, arrays: dict) -> dict:
    """Refused: the lm program times inside its ``lm`` request (TTFT and decode steps)."""
    raise ValueError("the lm program times inside its lm request")
