"""The way out a refusal names: the options a refusal's message tells the user to add, which the zoo then adds to the
same command to see that they work (issue 22: every refusal names a way out that works).

Only options that keep the cell's meaning are tried (a fixed batch, LiteRT instead of TF.js in the demo, Flex ops, a
signature). Advice to use another --quant mode alone is another cell, and is not retried here; but another mode *with*
an option ("use --quant fp32, fp16 or dynamic with --allow-select-tf-ops": int8 of a string-input model, which has no
integer form) is a way out only that pair proves, so ``named_mode`` gives the first such mode and the runner runs that
mode's command with the option, checked as that mode."""

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


_MODES = r"(?:fp32|fp16|dynamic|int8|int16x8)"
_MODE_CELLS = ("fp32", "fp16", "dynamic", "int8", "int16x8", "qat")
# "--quant fp32, fp16 or dynamic with --allow-select-tf-ops": modes listed, then the option they need
_MODE_WITH_OPTION = re.compile(rf"--quant ({_MODES}(?:(?:,\s*|,?\s+or\s+){_MODES})*)\s+with\s+(--[a-z][\w-]*)")


def named_mode(reason: str, cell: str) -> str | None:
    """The mode a refusal of ``cell`` sends the user to together with an option (the first mode listed other than
    ``cell`` before "with --OPTION"), or None when it names no such pair (or only negated: "not with"). Only for a
    cell that is one mode (auto chooses among them: an option it names is added to auto itself)."""
    if cell not in _MODE_CELLS:
        return None
    for m in _MODE_WITH_OPTION.finditer(reason):
        if _NEGATED.search(reason[max(0, m.start() - 24) : m.start()]):
            continue
        modes = [mode for mode in re.findall(_MODES, m.group(1)) if mode != cell]
        if modes and named_options(m.group(2), modes[0], []):
            return modes[0]
    return None


def with_options(args: list[str], extra: list[str]) -> list[str]:
    """``args`` with ``extra`` added (an option already present is replaced)."""
    return [*args, *extra]
