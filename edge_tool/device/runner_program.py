"""The program a ``--device`` board runs: ``board_runner`` and the board modules, plus the host's own latency loop and
LM loop, sent as one source text (``session`` starts it over SSH; it imports nothing of edgetool on the board)."""

from __future__ import annotations

import inspect

from edge_tool.device import board_facts, board_lm, board_model, board_runner, board_tflm
from edge_tool.litert import timing
from edge_tool.lm import generate, measure, sampling
from edge_tool.lm import session as lm_session

_FUTURE = "from __future__ import annotations"


def runner_source() -> str:
    """The program sent to the device: board_runner + board_facts + board_model + board_tflm + the host's own
    latency loop + main()."""
    parts = [
        inspect.getsource(board_runner),
        inspect.getsource(board_facts).replace(_FUTURE, ""),
        inspect.getsource(board_model).replace(_FUTURE, ""),
        inspect.getsource(board_tflm).replace(_FUTURE, ""),
        "from typing import Callable\n",
        *(inspect.getsource(f) for f in (timing.time_loop, timing.tflite_step, timing.fit_inputs)),
        *lm_sources(),
        # os._exit: the temp dir is gone and every answer flushed by then; skipping the interpreter's finalization
        # (a daemon reader thread blocked on its queue) avoids a deadlock seen in qemu-arm's Python 3.9 at exit
        "_code = main()\nsys.stderr.flush()\nos._exit(_code)\n",
    ]
    return "\n".join(parts)


# generate.stream draws through lm.sampler_kinds.sampler_kind; the board has the default kind only (eval's)
BOARD_SAMPLER_KIND = """
class BoardXorshift32:
    rng = staticmethod(lambda seed: Xorshift32(seed))
    pick = staticmethod(lambda logits, sampler, rng: sample(logits, sampler, rng))


def sampler_kind(sampler):
    return BoardXorshift32
"""


def lm_sources() -> list[str]:
    """The LM loop the board runs (``board_lm`` + the host's own LmSession, sampler, generate.stream and
    edge_tool.lm.measure's run), numpy imported only when the board has it (a board without says hello);
    ``board_lm.Sampler`` stands in for the dataclass (no dataclasses on the board)."""
    parts = [
        "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n",
        inspect.getsource(board_lm).replace(_FUTURE, ""),
        f"MASK = {sampling.MASK}\n",
        *(inspect.getsource(o) for o in (lm_session.LmSession, sampling.mix32, sampling.Xorshift32)),
        *(inspect.getsource(o) for o in (sampling.greedy, sampling.sample, generate.stream)),
        BOARD_SAMPLER_KIND,
        *(inspect.getsource(o) for o in (measure.windows, measure.teacher_forced, measure.continuations)),
        inspect.getsource(measure.lm_run),
        *(inspect.getsource(o) for o in (measure.zero_caches, measure.time_ttft, measure.time_decode, measure.timings)),
    ]
    return parts
