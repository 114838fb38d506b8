"""The eval table's task columns: the task's main metric, its drop and its agreement with the reference, as
display strings (classification keeps accuracy / drop / agreement)."""

from __future__ import annotations

from edge_tool.tasks import TASK_NAMES, TASKS, get_task

TASK_NUMERIC = {h for t in TASKS.values() for h in (t.main_metric, t.agreement_label)} | {"box IoU"}


def task_headers(task: dict | None) -> list[str]:
    """[main metric, "drop", agreement column] for the report's task (classification without one)."""
    t = _task(task)
    return [t.main_metric, "drop", t.agreement_label]


def reference_cells(task: dict | None, reference) -> list[str]:
    """The reference row's task cells."""
    t = _task(task)
    return [_value(t, t.main_metric, _main(t, reference.accuracy, reference.metrics)), "—", "—"]


def result_cells(task: dict | None, r) -> list[str]:
    """One artefact row's task cells ("does not run" when it failed before any figure)."""
    t = _task(task)
    if r.failed and r.top1_agreement is None and r.max_abs_error is None:
        main = "does not run"
    else:
        main = _value(t, t.main_metric, _main(t, r.accuracy, r.metrics))
    drop = r.accuracy_drop if t.name == "classification" else r.metric_drop
    agree = r.max_abs_error if t.agreement_label == "max abs err" else r.top1_agreement
    return [main, _drop(t, drop), _value(t, t.drift_keys[0], agree)]


def _task(task: dict | None):
    name = (task or {}).get("name")
    return get_task(name if name in TASK_NAMES else "classification")


def _main(t, accuracy, mets: dict | None):
    if t.name == "classification":
        return accuracy
    return None if not mets else mets.get(t.main_metric)


def _value(t, key: str, v) -> str:
    if v is None:
        return "—"
    return f"{100 * v:.2f}%" if key in t.percent else f"{v:.4g}"


def _drop(t, v) -> str:
    if v is None:
        return "—"
    return f"{100 * v:+.2f} pt" if t.main_metric in t.percent else f"{v:+.4f}"
