"""What ``edgetool serve`` checks in a request's headers before it answers: the Host (DNS rebinding) and how the
request's body is framed (request smuggling). Rules in docs/hardening.md.

Host: a page on a rebinding domain (``evil.example`` resolved to 127.0.0.1) reaches the server with its own name
in ``Host``. Accepted, with no port or the bound port: ``localhost`` (any case, optional trailing dot), any
127.0.0.0/8 address, ``[::1]`` (and IPv4-mapped loopback), and the bound address; when bound to every interface
(0.0.0.0 / ::), any IP literal, as Vite and webpack-dev-server do (rebinding needs a name, not an address).
Everything else: 403 (a name not allowed) or 400 (no Host on HTTP/1.1, several, or a malformed one).

Body: GET and HEAD carry no body we use, but one that is sent must be consumed, or its bytes would be read as
the next request. A ``Content-Length`` up to MAX_DISCARD bytes or a ``chunked`` body up to that size is read and
dropped; larger bodies get 413, conflicting or malformed framing gets 400; every refusal closes the connection.
"""

from __future__ import annotations

import ipaddress
import re
from typing import BinaryIO

MAX_DISCARD = 64 * 1024  # request body bytes read and dropped before the connection is closed instead
MAX_CHUNK_LINE = 1024
MAX_TRAILERS = 32
_PORT = re.compile(r"[0-9]{1,5}")
_NAME = re.compile(r"[A-Za-z0-9.-]+")  # reg-name characters a browser sends (IDNA already applied)
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9A-Fa-f]{1,8}")


class BadBody(Exception):
    """The request's body framing is refused: ``status`` (400/413) and a short reason for the log."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


def split_host(value: str) -> tuple[str, int | None] | None:
    """(host, port or None) from a Host header value; None when it is not ``uri-host [":" port]``."""
    value = value.strip(" \t")
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[1:end], value[end + 1 :]
        if end < 0 or not isinstance(_ip(host), ipaddress.IPv6Address):
            return None
    else:
        host, _, port = value.partition(":")
        rest = ":" + port if _ else ""
        if not _NAME.fullmatch(host):
            return None
    if not rest or rest == ":":
        return host, None
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]) or int(rest[1:]) > 65535:
        return None
    return host, int(rest[1:])


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def host_allowed(host: str, bound: str) -> bool:
    """True when ``host`` (no port, no brackets) may be answered by a server bound to the address ``bound``."""
    if host.lower().rstrip(".") == "localhost" and host.count(".") <= 1:
        return True
    ip, bound_ip = _ip(host), _ip(bound.split("%", 1)[0])
    if ip is None:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    if ip.is_loopback or (mapped is not None and mapped.is_loopback):
        return True
    return bound_ip is not None and (bound_ip.is_unspecified or ip == bound_ip)


def check_host(values: list[str], bound: str, port: int, http11: bool) -> tuple[int, str] | None:
    """None when the request's Host header(s) are acceptable, else (status, reason)."""
    if not values:
        return (400, "HTTP/1.1 request without a Host header") if http11 else None
    if len(values) > 1:
        return 400, "more than one Host header"
    parsed = split_host(values[0])
    if parsed is None:
        return 400, "malformed Host header"
    host, given_port = parsed
    if given_port is not None and given_port != port:
        return 403, "Host names another port"
    if not host_allowed(host, bound):
        return 403, "Host not allowed (this server answers only to localhost and its own address)"
    return None


def body_framing(lengths: list[str], encodings: list[str]) -> int | str:
    """How many body bytes follow (an int) or ``"chunked"``; BadBody when the framing is refused."""
    if lengths and encodings:
        raise BadBody(400, "both Content-Length and Transfer-Encoding")
    if encodings:
        if len(encodings) > 1 or encodings[0].strip(" \t").lower() != "chunked":
            raise BadBody(400, "unsupported Transfer-Encoding")
        return "chunked"
    values = {v.strip(" \t") for length in lengths for v in length.split(",")}
    if not values:
        return 0
    if len(values) > 1 or not all(_DIGITS.fullmatch(v) for v in values):
        raise BadBody(400, "malformed or conflicting Content-Length")
    size = int(values.pop())
    if size > MAX_DISCARD:
        raise BadBody(413, f"request body over {MAX_DISCARD} bytes")
    return size


def _read_exactly(rfile: BinaryIO, size: int) -> None:
    while size > 0:
        got = rfile.read(min(size, 65536))
        if not got:
            raise BadBody(400, "request body shorter than announced")
        size -= len(got)


def _chunk_line(rfile: BinaryIO) -> bytes:
    line = rfile.readline(MAX_CHUNK_LINE + 1)
    if len(line) > MAX_CHUNK_LINE or not line.endswith(b"\r\n"):
        raise BadBody(400, "malformed chunked body")
    return line[:-2]


def discard_body(rfile: BinaryIO, framing: int | str) -> None:
    """Read and drop the request body ``framing`` describes (bounded by MAX_DISCARD); BadBody when it is bad."""
    if framing != "chunked":
        _read_exactly(rfile, int(framing))
        return
    total = 0
    while True:
        size_text = _chunk_line(rfile).split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size_text.decode("latin-1")):
            raise BadBody(400, "malformed chunk size")
        size = int(size_text, 16)
        total += size
        if total > MAX_DISCARD:
            raise BadBody(413, f"request body over {MAX_DISCARD} bytes")
        if size == 0:
            break
        _read_exactly(rfile, size)
        if _chunk_line(rfile):
            raise BadBody(400, "chunk longer than its size")
    for _ in range(MAX_TRAILERS):
        if not _chunk_line(rfile):
            return
    raise BadBody(400, "too many trailer lines")
