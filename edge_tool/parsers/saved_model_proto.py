"""A SavedModel's protobuf (saved_model.pb, or saved_model.pbtxt), read size-checked and parsed, never loaded: the one
reader under both the model-code scan (``trust.graph_scan``) and the signature reader (``models.signatures``)."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from edge_tool.calibration.safe_open import read_regular
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.parsers.declared_sizes import check_graph_consts
from edge_tool.parsers.limits import MAX_DOCUMENT_BYTES, PROTOBUF_MAX


def parse_saved_model(path: Path, after: str = ""):
    """The ``SavedModel`` message of the directory ``path`` (binary first, else text); ModelError naming the file
    when it is too large, unreadable or no SavedModel protobuf (``after``: a sentence added to that message), or
    when a Const in it declares a tensor over the per-tensor limit (``declared_sizes``)."""
    import_tf()
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    pb = Path(path) / "saved_model.pb"
    source = pb if pb.is_file() else Path(path) / "saved_model.pbtxt"
    try:  # size-checked regular files first (protobuf cannot parse 2 GiB): nothing huge is read to be refused
        if source is pb:
            limit, why = PROTOBUF_MAX, "protocol buffers cannot parse a message of 2 GiB or more"
            sm.ParseFromString(read_regular(pb, "a SavedModel protobuf", ModelError, limit, why))
        else:
            limit, why = MAX_DOCUMENT_BYTES, "a text SavedModel that large is not one edgetool parses"
            text = read_regular(source, "a SavedModel text protobuf", ModelError, limit, why)
            text_format.Parse(text.decode("utf-8"), sm)
    except (DecodeError, text_format.ParseError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise ModelError(
            f"{source} is not a readable SavedModel protobuf ({type(exc).__name__}: {str(exc)[:200]}){after}"
        ) from None
    check_graph_consts(sm, source)
    return sm
