"""convert --quant auto's command side: recognising it, the flags it needs or refuses, and its run (``edge_tool.auto``)."""

from __future__ import annotations

from edge_tool.convert.enums import IOType
from edge_tool.convert.formats import OutputFormat
from edge_tool.errors import UsageError


def is_auto(values: list[str] | None) -> bool:
    """True for --quant auto (given alone; UsageError when mixed with named modes)."""
    raw = [v.strip().lower() for value in (values or []) for v in value.split(",") if v.strip()]
    if "auto" in raw and raw != ["auto"]:
        raise UsageError(f"--quant auto chooses among the modes itself; give it alone, got {', '.join(raw)}.")
    return raw == ["auto"]


def check_auto_options(max_drop, eval_data, output_format: OutputFormat, io_type: IOType) -> None:
    """The flags --quant auto needs or refuses (UsageError listing every problem)."""
    problems = []
    if max_drop is None:
        problems.append("--quant auto needs --max-drop (the accuracy budget, e.g. 0.01 = 1 point).")
    if eval_data is None:
        problems.append("--quant auto needs --eval-data (labelled x, y to measure accuracy on).")
    if output_format is not OutputFormat.TFLITE:
        problems.append(f"--quant auto chooses a .tflite; --format {output_format.value} is not supported with it.")
    if io_type not in (IOType.MODEL, IOType.FLOAT32):
        problems.append(f"--quant auto keeps float model I/O; --io-type {io_type.value} is not supported with it.")
    if problems:
        raise UsageError(" ".join(problems))


def run_auto(candidates, max_drop, eval_data, objective, threads, max_float_layers, require, device) -> None:
    """``--quant auto``: candidates, measurement, decision (exit 1 with the table when nothing is in budget)."""
    from edge_tool.auto import AutoConfig, budget_error, print_result, run_auto

    result = run_auto(
        AutoConfig(
            convert=candidates,
            max_drop=max_drop,
            eval_data=eval_data,
            objective=objective,
            threads=threads,
            max_float_layers=max_float_layers,
            require=require,
            device=device,
        )
    )
    print_result(result)
    if result.chosen is None:
        raise budget_error(result)
