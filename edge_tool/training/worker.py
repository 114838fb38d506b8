"""Entry point of one local MultiWorkerMirroredStrategy worker: ``python -m edge_tool.training.worker SPEC.json``.

SPEC.json holds {"config": TrainConfig.to_dict(), "save_dir": str, "status_file": str, "is_chief": bool};
TF_CONFIG (set by the launcher) says which task this process is. On success the status dict is
written to ``status_file``; on failure the traceback goes to stderr and the exit code is 1.

``EDGETOOL_FAIL_WORKER=i`` makes worker task ``i`` fail on purpose at the end of its first epoch, while
the others wait for it in a collective (the tests use it to check that one failing worker stops the whole
run and leaves no output).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from edge_tool.training.config import TrainConfig
from edge_tool.training.multiworker import run_task


def _fail_after_first_epoch(keras, task_index: int):
    class FailAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError(f"injected failure in worker {task_index} (EDGETOOL_FAIL_WORKER={task_index})")

    return FailAfterFirstEpoch()


def main(argv: list[str]) -> int:
    """Run one worker task from a spec file; return the process exit code."""
    spec = json.loads(Path(argv[0]).read_text())
    task_index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    fail = os.environ.get("EDGETOOL_FAIL_WORKER") == str(task_index)
    config = TrainConfig(**spec["config"])
    status = run_task(
        config,
        Path(spec["save_dir"]),
        is_chief=bool(spec["is_chief"]),
        make_callbacks=(lambda keras: [_fail_after_first_epoch(keras, task_index)]) if fail else None,
    )
    Path(spec["status_file"]).write_text(json.dumps(status))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
