"""A request's head (request line + headers, and the body bytes that came with it) is gathered in the selector thread,
never in a worker: a client trickling its request holds a buffer and a file descriptor, not one of the pool's
threads, and has the server's request deadline (5 s) from its first byte to finish (issue 40, item 6: 500 connections sending one byte a
second stalled a normal GET for 12 s when each held a worker until a 15 s cut-off).

``gather`` consumes from the socket only what belongs to the current request (the bytes up to the blank line that
ends the headers, then its body as far as it has arrived), peeking first, so a pipelined next request stays in the
kernel. The worker reads the request through ``Prefixed`` (the gathered bytes, then the socket for a head too long
to gather); a body not complete in them is not waited for: the answer goes out and the connection is closed.
"""

from __future__ import annotations

import io
import re
import socket

from edge_tool.webserver.guard import MAX_DISCARD

MAX_HEAD = 65536 + 100 * 8192  # longer than http.server accepts (a 64 KiB line, 100 headers): handed over, refused
PEEK = 65536  # bytes looked at per readable event (a longer request is gathered over several)
_LENGTH = re.compile(rb"^content-length:[ \t]*(\d{1,9})[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_CHUNKED = re.compile(rb"^transfer-encoding:", re.IGNORECASE | re.MULTILINE)
_HEX = re.compile(rb"[0-9A-Fa-f]{1,8}")


def head_end(data: bytes) -> int | None:
    """Where the request in ``data`` ends, or None while its head (line and headers) is incomplete. With the head
    complete the request is answered at once: its body's bytes that have arrived belong to it (all of them when the
    body is not complete yet: a pipelined next request cannot come before it). A request line without an HTTP
    version ends at its newline (http.server reads no headers); odd framing ends at the head (the worker refuses)."""
    pos = data.find(b"\n")
    if pos < 0:
        return None if len(data) <= MAX_HEAD else len(data)
    if len(data[:pos].split()) < 3:
        return pos + 1
    while True:
        nxt = data.find(b"\n", pos + 1)
        if nxt < 0:
            return None if len(data) <= MAX_HEAD else len(data)
        if data[pos + 1 : nxt] in (b"", b"\r"):
            break
        pos = nxt
    end = nxt + 1
    lengths = _LENGTH.findall(data[:end])
    if _CHUNKED.search(data[:end]):
        body_end = _chunked_end(data, end) if not lengths else end
        return len(data) if body_end is None else body_end
    if len(lengths) != 1 or int(lengths[0]) > MAX_DISCARD:
        return end
    return min(end + int(lengths[0]), len(data))


def _chunked_end(data: bytes, pos: int) -> int | None:
    """Where a chunked body starting at ``pos`` ends (its last chunk and trailers included), None when more must
    arrive; at anything malformed or over MAX_DISCARD, the place it was found (the worker refuses it)."""
    total, last = 0, False
    while True:
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            return None if len(data) - pos <= MAX_HEAD else pos
        line = data[pos:nxt].rstrip(b"\r")
        if last:  # trailer lines, up to the blank one
            pos = nxt + 1
            if not line:
                return pos
            continue
        size_text = line.split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size_text) or total + int(size_text, 16) > MAX_DISCARD:
            return pos
        size, pos = int(size_text, 16), nxt + 1
        total, last = total + size, size == 0
        if not last:
            if len(data) < pos + size + 2:
                return None
            pos += size + 2


def gather(conn: socket.socket, buf: bytearray) -> str:
    """Read what has arrived for the current request into ``buf`` without blocking: "done" (``buf`` holds the whole
    request), "more" (wait for more) or "closed" (the client closed or the socket failed)."""
    try:
        peeked = conn.recv(PEEK, socket.MSG_PEEK | socket.MSG_DONTWAIT)  # without the end, all of it is taken
    except BlockingIOError:
        return "more"
    except OSError:
        return "closed"
    if not peeked:
        return "closed"
    end = head_end(bytes(buf) + peeked)
    take = len(peeked) if end is None else end - len(buf)
    try:
        buf += conn.recv(take, socket.MSG_DONTWAIT)  # exactly what was peeked (or the request's part of it)
    except OSError:
        return "closed"
    return "more" if end is None else "done"


class Prefixed(io.RawIOBase):
    """A raw reader giving ``prefix`` first, then ``raw`` (the socket's unbuffered reader)."""

    def __init__(self, prefix: bytes, raw):
        super().__init__()
        self._prefix, self._raw = memoryview(bytes(prefix)), raw
        self.from_socket = True  # False: past the prefix is EOF (a body still arriving is not waited for)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n], self._prefix = self._prefix[:n], self._prefix[n:]
            return n
        return self._raw.readinto(b) if self.from_socket else 0
