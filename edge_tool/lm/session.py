"""Run a contract LM call by call, the caches fed from each call's outputs to the next call's inputs.

``LmSession(call, contract)`` works over any runtime: ``call(signature_key, feeds) -> outputs`` (numpy dicts named
as the contract names them). ``saved_model_call`` (TensorFlow) and ``tflite_call`` (LiteRT's signature runners) make
one. A prefill of T tokens writes cache rows input_pos[0]..input_pos[0]+T-1, so a chunk is only sent when it fits
below max_len; a tail that does not goes through decode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from edge_tool.core.env import import_tf
from edge_tool.litert.runtime import load_interpreter
from edge_tool.lm.contract import DECODE, LmContract, read_lm_contract

Call = Callable[[str, dict], dict]


class LmSession:
    """One sequence's state: the caches and the next position."""

    def __init__(self, call: Call, contract: LmContract) -> None:
        self.call, self.contract = call, contract
        self.pad_id = contract.spec.pad_id if contract.spec is not None else 0
        self.reset()

    def reset(self) -> None:
        """Empty caches (zeros), position 0."""
        c = self.contract
        shape = c.cache_shape()
        self.caches = {f"kv_cache_{k}_{i}": np.zeros(shape, np.float32) for i in range(c.num_layers) for k in "kv"}
        self.position = 0

    def _run(self, key: str, tokens: Sequence[int], n: int) -> np.ndarray:
        """Call ``key`` on ``tokens`` (padded to the signature's length), keep the caches; logits [n, V] of the first n."""
        t = len(tokens)
        if self.position + t > self.contract.max_len:
            raise ValueError(f"{key} at position {self.position} would pass max_len {self.contract.max_len}")
        feeds = {
            "tokens": np.asarray(tokens, np.int32).reshape(1, t),
            "input_pos": np.arange(self.position, self.position + t, dtype=np.int32),
            **self.caches,
        }
        out = self.call(key, feeds)
        self.caches = {k: np.asarray(out[k]) for k in self.caches}
        self.position += n
        return np.asarray(out["logits"])[0, :n]

    def prefill(self, tokens: Sequence[int], length: int | None = None) -> np.ndarray:
        """One prefill call (``length``: which prefill; default the shortest that holds the tokens); logits [n, V]."""
        tokens = list(tokens)
        length = length or min((t for t in self.contract.prefill_lengths if t >= len(tokens)), default=None)
        if length is None or len(tokens) > length:
            raise ValueError(f"no prefill takes {len(tokens)} tokens (lengths {self.contract.prefill_lengths})")
        padded = tokens + [self.pad_id] * (length - len(tokens))
        return self._run(self.contract.prefill_key(length), padded, len(tokens))

    def decode(self, token: int) -> np.ndarray:
        """One decode call; logits [V] of ``token`` at the current position."""
        return self._run(DECODE, [int(token)], 1)[0]

    def feed(self, tokens: Sequence[int]) -> np.ndarray:
        """Logits [n, V] of every token: the longest prefills that fit, then the shortest padded one, then decode."""
        tokens, out = list(tokens), []
        while tokens:
            room = self.contract.max_len - self.position
            whole = [t for t in self.contract.prefill_lengths if t <= min(len(tokens), room)]
            padded = [t for t in self.contract.prefill_lengths if len(tokens) < t <= room]
            if whole:
                n = length = max(whole)
            elif padded:
                n, length = len(tokens), min(padded)
            else:
                out.append(self.decode(tokens.pop(0))[None])
                continue
            out.append(self.prefill(tokens[:n], length))
            tokens = tokens[n:]
        return np.concatenate(out, 0) if out else np.zeros((0, self.contract.vocab_size), np.float32)


def saved_model_call(path: Path) -> Call:
    """``call`` over a contract SavedModel's signatures in TensorFlow."""
    tf = import_tf()
    loaded = tf.saved_model.load(str(path))

    def call(key: str, feeds: dict) -> dict:
        _ = loaded  # signatures hold their variables weakly
        out = loaded.signatures[key](**{k: tf.constant(v) for k, v in feeds.items()})
        return {k: v.numpy() for k, v in out.items()}

    return call


def tflite_call(path: Path, num_threads: int | None = None) -> Call:
    """``call`` over a contract .tflite's signature runners in LiteRT."""
    interp = load_interpreter(Path(path), num_threads=num_threads)
    runners: dict = {}

    def call(key: str, feeds: dict) -> dict:
        if key not in runners:
            runners[key] = interp.get_signature_runner(key)
        return runners[key](**feeds)  # LiteRT returns copies already (GetTensor): no second copy per call

    return call


def open_session(path: Path, num_threads: int | None = None) -> LmSession:
    """An ``LmSession`` on a contract SavedModel directory or .tflite (validated first: LmContractError, exit 2)."""
    contract = read_lm_contract(path)
    call = saved_model_call(path) if Path(path).is_dir() else tflite_call(path, num_threads)
    return LmSession(call, contract)
