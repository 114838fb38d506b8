"""The way out a refusal names: the options a refusal's message tells the user to add, which the zoo then adds to the
same command to see that they work (issue 22: every refusal names a way out that works).

Only options that keep the cell's meaning are tried (a fixed batch, LiteRT instead of TF.js in the demo, Flex ops, a
signature); advice to use another --quant mode is another cell, and is not retried here."""

from __future__ import annotations

import re

# option pattern -> the arguments to add (groups of the match fill the value)
_OPTIONS = (
    (re.compile(r"--batch[ =](\d+)"), lambda m: ["--batch", m.group(1)]),
    (re.compile(r"--litert\b"), lambda m: ["--litert"]),
    (re.compile(r"--allow-select-tf-ops\b"), lambda m: ["--allow-select-tf-ops"]),
    (re.compile(r"--signature[ =]([A-Za-z_][\w]*)"), lambda m: ["--signature", m.group(1)]),
)
_NEGATED = re.compile(r"\b(not|nor|neither|no)\b[^.;]*$", re.IGNORECASE)  # "not with --X", "nor --X": not advice
_APPLIES = {
    "--litert": ("demo",),
    "--batch": ("fp32", "fp16", "dynamic", "int8", "int16x8", "auto", "tfjs"),
    "--allow-select-tf-ops": ("fp32", "fp16", "dynamic", "int8", "int16x8", "auto"),
    "--signature": ("fp32", "fp16", "dynamic", "int8", "int16x8", "qat", "tfjs", "auto", "eval", "demo"),
}


def named_options(reason: str, cell: str, args: list[str]) -> list[str]:
    """The options ``reason`` names that apply to ``cell`` and ``args`` lacks, as extra CLI arguments (may be [])."""
    extra: list[str] = []
    for pattern, make in _OPTIONS:
        m = next(
            (
                m
                for m in pattern.finditer(reason)
                if not _NEGATED.search(reason[max(0, m.start() - 24) : m.start()])
                and "does not help" not in reason[m.end() : m.end() + 25]
            ),
            None,
        )
        if not m:
            continue
        option = make(m)
        if cell in _APPLIES[option[0]] and option[0] not in args and option[0] not in extra:
            extra += option
    return extra


def with_options(args: list[str], extra: list[str]) -> list[str]:
    """``args`` with ``extra`` added (an option already present is replaced)."""
    return [*args, *extra]
