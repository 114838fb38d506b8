"""EvalConfig: everything ``edgetool eval`` was asked to do, validated at once."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from edge_tool.contract.options import ContractOptions
from edge_tool.device.url import DeviceURL
from edge_tool.errors import UsageError, below_minimum, collect_and_raise
from edge_tool.tasks import TASK_NAMES
from edge_tool.tasks.keypoints import ORDERS as KEYPOINT_ORDERS

DEFAULT_RUNS = 100
DEFAULT_BATCH = 16  # samples per call: the reference's peak memory grows with it (docs/performance.md, "Defaults")


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate, against what, on which data, how to time it and which budgets gate CI.

    ``runs`` and ``time_budget_s`` are exclusive: with a time budget the loop runs until it is spent.
    ``max_drop`` is a drop of the task's main metric (accuracy, f1_macro, r2, miou, box_iou, recall_at_1, pck; psnr in dB) as a fraction
    (0.01 = one percentage point); ``max_error`` gates the largest absolute output difference from the reference;
    ``max_latency_ms`` gates the LiteRT p50 of each .tflite artefact. ``batch_size`` is how many samples the streaming pass reads
    and sends through the reference and every artefact at a time (memory is O(batch_size), not O(data)).
    ``threads`` is the latency loop's LiteRT thread count; the accuracy pass uses ``pass_threads`` per artefact
    (default: the cores the reference leaves; the LiteRT workers take turns on them while the reference runs).
    """

    artifacts: tuple[Path, ...]
    reference: Path
    data: Path | None = None  # None only for --task lm (which reads --text)
    threads: int = 1
    warmup: int = 10
    runs: int | None = None
    time_budget_s: float | None = None
    max_drop: float | None = None
    max_latency_ms: float | None = None
    per_layer: bool = False
    per_layer_top: int = 10
    top_k: int = 5
    json_path: Path | None = None
    markdown_path: Path | None = None
    html_path: Path | None = None
    force: bool = False
    seed: int = 0
    latency_in_subprocess: bool = True
    batch_size: int = DEFAULT_BATCH
    pass_threads: int | None = None
    runtime: str = "litert"
    max_arena_kb: float | None = None
    max_flash_kb: float | None = None
    devices: tuple[str | DeviceURL, ...] = ()  # --device ssh://... URLs: each .tflite also runs there (device/)
    task: str | None = None  # None: inferred from the model and the labels (edge_tool.tasks)
    threshold: float = 0.5  # multi-label / one-channel segmentation decision threshold
    keypoint_order: str = "xy"  # --task keypoints: labels' coordinate order, xy (x, y) or yx (row, column)
    max_error: float | None = None  # largest |artefact - reference| output difference allowed
    trust_model_code: bool = False  # --trust-model-code: run a reference/artefact that carries code (trust)
    labels: Path | None = None  # the model's class labels (default: labels.txt in/beside the reference, an artefact's)
    contract: ContractOptions = ContractOptions()  # --input-range / --input-mean / --input-std
    signature: str | None = None  # the reference SavedModel's signature; None = serving_default
    text: Path | None = None  # --task lm: the held-out text (byte-level ids)
    prompts: Path | None = None  # --task lm: one prompt per line (default: slices of the text)
    device_urls: tuple[DeviceURL, ...] = field(default=(), init=False, repr=False, compare=False)  # devices, parsed

    def __post_init__(self) -> None:
        problems = []
        if self.task is not None and self.task not in TASK_NAMES:
            problems.append(f"--task expects one of {', '.join(TASK_NAMES)}, got {self.task!r}")
        if self.keypoint_order not in KEYPOINT_ORDERS:
            problems.append(f"--keypoint-order expects xy or yx, got {self.keypoint_order!r}")
        if not math.isfinite(self.threshold):
            problems.append(f"--threshold must be a finite number, got {self.threshold}")
        if self.max_error is not None and not self.max_error >= 0:
            problems.append(f"--max-error must be >= 0, got {self.max_error}")
        for name, value in (("--max-arena-kb", self.max_arena_kb), ("--max-flash-kb", self.max_flash_kb)):
            if value is not None and self.runtime != "tflm":
                problems.append(f"{name} gates TFLite Micro figures; add --runtime tflm")
            if value is not None and not value > 0:
                problems.append(f"{name} must be > 0, got {value}")
        urls, device_problems = _parse_devices(self.devices)
        object.__setattr__(self, "device_urls", urls)
        problems += device_problems
        problems += _lm_problems(self)
        if not self.artifacts:
            problems.append("give at least one ARTIFACT (.tflite file, TFJS model directory or .onnx file)")
        problems += below_minimum(
            {
                "--threads": (self.threads, 1),
                "--warmup": (self.warmup, 0),
                "--top-k": (self.top_k, 2),
                "--batch-size": (self.batch_size, 1),
                "per-layer top N": (self.per_layer_top, 1),
                "pass threads": (self.pass_threads or 1, 1),
            }
        )
        if self.runs is not None and self.time_budget_s is not None:
            problems.append("--runs and --time-budget are exclusive; give one of them")
        if self.runs is not None and self.runs < 1:
            problems.append(f"--runs must be >= 1, got {self.runs}")
        if self.time_budget_s is not None and not self.time_budget_s > 0:
            problems.append(f"--time-budget must be > 0 seconds, got {self.time_budget_s}")
        if self.max_drop is not None and not 0 <= self.max_drop <= 1:
            problems.append(
                f"--max-drop is a fraction in [0, 1] of the task's main metric (0.01 = 1 point), got {self.max_drop}"
            )
        if self.max_latency_ms is not None and not self.max_latency_ms > 0:
            problems.append(f"--max-latency-ms must be > 0, got {self.max_latency_ms}")
        if self.labels is not None and not Path(self.labels).is_file():
            problems.append(f"--labels {self.labels} is not a file (expected one label per line)")
        outs = [p for p in (self.json_path, self.markdown_path, self.html_path) if p is not None]
        if len({Path(p).resolve() for p in outs}) != len(outs):
            problems.append("--json, --markdown and --html must name different files")
        collect_and_raise(problems, UsageError, "Invalid eval options:" if len(problems) > 1 else "")

    @property
    def inputs(self) -> tuple[tuple[str, Path | None], ...]:
        """(name, path) of every input the report files must stay clear of (fsutil.check_not_input)."""
        return (
            *(("artefact", a) for a in self.artifacts),
            ("reference model", self.reference),
            ("eval data", self.data),
            ("held-out text", self.text),
            ("prompts", self.prompts),
            ("labels", self.labels),
        )

    @property
    def effective_runs(self) -> int | None:
        """Timed runs per artefact (None when a time budget governs)."""
        if self.time_budget_s is not None:
            return None
        return self.runs if self.runs is not None else DEFAULT_RUNS

    @property
    def timed(self) -> bool:
        """Whether latency is measured at all (timed runs, or a time budget)."""
        return bool(self.effective_runs or self.time_budget_s)

    def accuracy_threads(self, workers: int = 1) -> int:
        """LiteRT threads of each of ``workers`` accuracy-pass processes: ``pass_threads`` if set, else the usable
        cores the reference leaves (the workers take turns on them, see ``tflite_worker.CoreLock``)."""
        if self.pass_threads is not None:
            return self.pass_threads
        return max(1, _cores() - (self.reference_threads(workers) or 0))

    @staticmethod
    def reference_threads(workers: int) -> int | None:
        """TensorFlow threads of the reference during the pass: half the usable cores when ``workers`` LiteRT
        workers run beside it (None, TensorFlow's default of every core, when none do). More would oversubscribe
        the cores: TensorFlow's pool then spins and its threads wait for a core, which costs CPU time per sample
        (docs/performance.md, "Defaults")."""
        return max(1, _cores() // 2) if workers else None

    @property
    def report_paths(self) -> dict[str, Path]:
        """The report files asked for, by kind."""
        pairs = {"json": self.json_path, "markdown": self.markdown_path, "html": self.html_path}
        return {k: Path(v) for k, v in pairs.items() if v is not None}


def _cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _parse_devices(devices: tuple) -> tuple[tuple[DeviceURL, ...], list[str]]:
    """The --device URLs parsed (once: the runners use these records), and the problems: each URL that does not
    parse, and repeated URLs."""
    urls, problems = [], []
    for url in devices:
        try:
            urls.append(DeviceURL.parse(url))
        except UsageError as exc:
            problems.append(str(exc))
    if len({u.url for u in urls}) != len(urls):
        problems.append("--device names the same URL twice")
    return tuple(urls), problems


def _lm_problems(c: EvalConfig) -> list[str]:
    """--text / --prompts / --data against --task: an LM reads a text, every other task --data."""
    problems = []
    lm = c.task == "lm" or (c.task is None and c.text is not None)
    if lm and c.data is not None:
        problems.append("--task lm reads --text (a held-out text), not --data; drop --data")
    if c.task not in (None, "lm") and c.text is not None:
        problems.append(f"--text is the held-out text of --task lm, not of --task {c.task}")
    if c.prompts is not None and c.text is None:
        problems.append("--prompts goes with --text (--task lm)")
    for flag, path in (("--text", c.text), ("--prompts", c.prompts)):
        if path is not None and not Path(path).is_file():
            problems.append(f"{flag} {path} is not a file (expected UTF-8 text)")
    return problems
