"""Text for ``--model lm``: by default the bundled King James Version Genesis and Exodus (public domain; source and
licence in data/LM_TEXT_LICENSE.md), or the user's ``--text``. It is split by blank-line blocks (the bundled text's
chapters) — every 20th block is held out — into windows of token ids (UTF-8 bytes, or with ``--tokenizer bpe`` the
ids of a byte-level BPE trained on the training part only); a text of fewer than 40 blocks holds out its last
tenth."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from edge_tool.errors import DataError
from edge_tool.lm.tokenizer.bpe import train_bpe

TEXT_FILE = "kjv_genesis_exodus.txt"
HELDOUT_EVERY = 20  # blocks 20, 40, …: never trained on
BLOCK_BREAK = "\n\n"


@dataclass(frozen=True)
class TextSplit:
    """Token windows (x: ids [n, seq], y: the next ids) of the training and held-out text, the held-out text, and
    the trained tokenizer's tokenizer.json (None for bytes)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_eval: np.ndarray
    y_eval: np.ndarray
    heldout_text: str
    tokenizer_json: str | None = None


def bundled_text() -> str:
    """The whole bundled corpus (ASCII)."""
    return (resources.files("edge_tool.training") / "data" / TEXT_FILE).read_text(encoding="utf-8")


def split_text(text: str) -> tuple[str, str]:
    """(training text, held-out text): every HELDOUT_EVERY-th blank-line block, or the last tenth of a short text."""
    blocks = text.strip("\n").split(BLOCK_BREAK)
    if len(blocks) >= 2 * HELDOUT_EVERY:
        held = [c for i, c in enumerate(blocks) if i % HELDOUT_EVERY == HELDOUT_EVERY - 1]
        train = [c for i, c in enumerate(blocks) if i % HELDOUT_EVERY != HELDOUT_EVERY - 1]
        return BLOCK_BREAK.join(train) + "\n", BLOCK_BREAK.join(held) + "\n"
    cut = text.rfind("\n", 0, len(text) * 9 // 10) + 1 or len(text) * 9 // 10
    return text[:cut], text[cut:]


def byte_windows(text: str, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows of ``seq_len`` byte ids (int32) and the ids one byte later."""
    return id_windows(np.frombuffer(text.encode("utf-8"), np.uint8), seq_len)


def id_windows(ids, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows of ``seq_len`` ids (int32) and the ids one token later."""
    ids = np.asarray(ids).astype(np.int32)
    n = (len(ids) - 1) // seq_len
    x = ids[: n * seq_len].reshape(n, seq_len)
    y = ids[1 : n * seq_len + 1].reshape(n, seq_len)
    return x, y


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"--text {path} could not be read as UTF-8 text ({exc}); give a UTF-8 text file.") from None


def load_text_split(
    seq_len: int, text_file: Path | None = None, eval_len: int | None = None, bpe_vocab: int | None = None
) -> TextSplit:
    """``text_file`` (default: the bundled corpus) as training windows of ``seq_len`` tokens and held-out ones of
    ``eval_len`` (default: ``seq_len``): bytes, or with ``bpe_vocab`` the ids of a BPE trained on the training
    part."""
    text = bundled_text() if text_file is None else _read(Path(text_file))
    train, held = split_text(text)
    tokenizer = None
    if bpe_vocab is None:
        x, y = byte_windows(train, seq_len)
        xe, ye = byte_windows(held, eval_len or seq_len)
    else:
        from tokenizers import Tokenizer

        tokenizer = train_bpe(train, bpe_vocab)
        hf = Tokenizer.from_str(tokenizer)
        x, y = id_windows(hf.encode(train, add_special_tokens=False).ids, seq_len)
        xe, ye = id_windows(hf.encode(held, add_special_tokens=False).ids, eval_len or seq_len)
    if len(x) < 1 or len(xe) < 1:
        need = 10 * (max(seq_len, eval_len or 0) + 1)
        raise DataError(
            f"--text {text_file} holds {len(text.encode('utf-8')):,} bytes: too little for training and held-out "
            f"windows of {seq_len} tokens; give at least {need:,} bytes of text."
        )
    return TextSplit(x, y, xe, ye, held, tokenizer)
