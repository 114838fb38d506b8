"""Carry a .tflite's associated files (labels.txt, vocabularies: the zip archive appended after the flatbuffer) over
to a file rewritten from it. A flatbuffer rewriter (ai-edge-quantizer) keeps the TFLITE_METADATA buffer, which names
these files, but drops the archive, so the rewritten file's metadata would point at files it no longer has."""

from __future__ import annotations

import io
import zipfile

from edge_tool.metadata.reader import MAX_MEMBERS, safe_member_name

MAX_FILE_BYTES = 64 << 20  # one associated file (a vocabulary, a labels file); larger ones are not carried


def associated_files(data: bytes) -> dict[str, bytes]:
    """The files appended to ``data`` as a zip archive (plain names only, at most ``MAX_MEMBERS`` of at most
    ``MAX_FILE_BYTES`` each); {} when there is no archive."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return {}
    found = {}
    with zf:
        for info in zf.infolist()[:MAX_MEMBERS]:
            if not safe_member_name(info.filename) or info.file_size > MAX_FILE_BYTES:
                continue
            try:
                with zf.open(info) as fh:
                    content = fh.read(MAX_FILE_BYTES + 1)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
                continue
            if len(content) <= MAX_FILE_BYTES:
                found[info.filename] = content
    return found


def carry_associated_files(source: bytes, rewritten: bytes) -> tuple[bytes, tuple[str, ...]]:
    """``rewritten`` with ``source``'s associated files appended when it lost them, and the names carried."""
    files = associated_files(source)
    if not files or associated_files(rewritten):
        return rewritten, ()
    out = io.BytesIO(rewritten)
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, "a") as zf:
        for name, content in files.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), content)
    return out.getvalue(), tuple(files)
