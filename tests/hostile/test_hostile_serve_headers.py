"""serve against DNS rebinding and request smuggling, with real sockets on 127.0.0.1.

A page on a rebinding domain reaches the server with its own name in Host: 403 and no byte of the site. A GET
or HEAD with a body (Content-Length or chunked) has the body read and dropped: a request hidden in it never gets
an answer; conflicting or malformed framing gets 400 and the connection closes. Hypothesis fuzzes Host values
and header sets against an oracle written here (not the server's own parser): valid hosts answered, anything
else refused, never a 5xx and never a hang (every socket has a timeout, every request ends with EOF).
"""

from __future__ import annotations

import re
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile.test_hostile_serve import running
from tests.test_serve import SITE_FILES, site  # noqa: F401 (fixture)

INDEX = SITE_FILES["index.html"].encode()
APP_JS = SITE_FILES["app.js"].encode()


def exchange(port: int, raw: bytes, timeout: float = 20) -> list[tuple[int, dict, bytes]]:
    """Send ``raw``, close our sending side, read until the server closes; every response, in order (GETs only)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    responses = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, f"a response without the end of its headers: {data[:200]!r}"
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        size = int(headers.get("content-length", "0"))
        if not 100 <= int(lines[0].split()[1]) < 200:  # "100 Continue" is not an answer
            responses.append((int(lines[0].split()[1]), headers, rest[:size]))
        data = rest[size:]
    return responses


def get(target: str = "/index.html", host: str | None = "127.0.0.1", extra: str = "", version: str = "1.1") -> bytes:
    host_line = "" if host is None else f"Host: {host}\r\n"
    return f"GET {target} HTTP/{version}\r\n{host_line}{extra}\r\n".encode("latin-1")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    root = tmp_path_factory.mktemp("hdr") / "site"
    for rel, text in SITE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with running(root) as server:
        yield server


# ------------------------------------------------------------------ Host (DNS rebinding)

REBINDING = [
    "evil.example",
    "evil.example:{port}",
    "localhost.evil.example",
    "127.0.0.1.nip.io:{port}",
    "attacker.localhost.com",
    "10.0.0.1",
    "192.168.1.20:{port}",
    "[::2]",
    "[fe80::1]:{port}",
    "0.0.0.0",
    "127.0.0.1:1",
    "localhost:{wrong}",
    "[::1]:{wrong}",
    "[localhost]",
    "xn--80ak6aa92e.com",
]
ALLOWED = [
    "127.0.0.1",
    "127.0.0.1:{port}",
    "localhost",
    "LocalHost:{port}",
    "localhost.",
    "127.9.8.7:{port}",
    "[::1]",
    "[::1]:{port}",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]:{port}",
    " 127.0.0.1 ",
]


@pytest.mark.parametrize("host", REBINDING)
def test_a_rebinding_host_is_refused_with_no_byte_of_the_site(srv, host):
    port = srv.server_address[1]
    value = host.format(port=port, wrong=port + 1 if port < 65535 else 1)
    responses = exchange(port, get(host=value) + get())  # a second, valid request on the same connection
    assert len(responses) == 1 and responses[0][0] in (400, 403), responses  # refused, then the connection closed
    assert INDEX not in responses[0][2] and b"<title>x</title>" not in responses[0][2]


@pytest.mark.parametrize("host", ALLOWED)
def test_localhost_loopback_and_the_bound_address_are_answered(srv, host):
    port = srv.server_address[1]
    [(status, _, body)] = exchange(port, get(host=host.format(port=port), extra="Connection: close\r\n"))
    assert (status, body) == (200, INDEX)


def test_http11_without_host_is_400_and_http10_without_host_is_served(srv):
    port = srv.server_address[1]
    assert [r[0] for r in exchange(port, get(host=None) + get())] == [400]
    assert [r[0] for r in exchange(port, get(host=None, version="1.0"))] == [200]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "\x00GET", "BREW"])
def test_other_methods_get_405_with_allow_and_their_body_is_not_a_request(srv, method):
    raw = f"{method} /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(SMUGGLED)}\r\n\r\n".encode()
    responses = exchange(srv.server_address[1], raw + SMUGGLED)
    assert [(s, h.get("allow")) for s, h, _ in responses] == [(405, "GET, HEAD")], responses


def test_two_host_headers_are_400(srv):
    raw = get(host="127.0.0.1", extra="Host: evil.example\r\n")
    assert [r[0] for r in exchange(srv.server_address[1], raw)] == [400]


def test_a_server_bound_to_every_interface_answers_ip_literals_but_not_names(site):
    with running(site, address=("0.0.0.0", 0)) as server:
        port = server.server_address[1]
        assert exchange(port, get(host=f"192.168.1.20:{port}", extra="Connection: close\r\n"))[0][0] == 200
        assert exchange(port, get(host=f"evil.example:{port}"))[0][0] == 403


# ------------------------------------------------------------------ body framing (request smuggling)

SMUGGLED = get("/app.js")  # what a hidden second request would fetch


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_content_length_body_is_dropped_and_never_read_as_a_request(srv, method):
    first = f"{method} /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(SMUGGLED)}\r\n\r\n".encode()
    raw = first + SMUGGLED + get("/app.css", extra="Connection: close\r\n")
    with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=20) as sock:
        sock.sendall(raw)
        data = b"".join(iter(lambda: sock.recv(65536), b""))
    assert data.count(b"HTTP/1.1 200") == 2, data  # the first request and the real second one: no third
    assert APP_JS not in data and b"text/javascript" not in data
    assert data.endswith(SITE_FILES["app.css"].encode())


def test_a_chunked_body_is_dropped_and_never_read_as_a_request(srv):
    body = f"{len(SMUGGLED):x};ext=1\r\n".encode() + SMUGGLED + b"\r\n0\r\nX-Trailer: 1\r\n\r\n"
    raw = get(extra="Transfer-Encoding: chunked\r\n") + body + get("/app.css")
    statuses = [(s, b) for s, _, b in exchange(srv.server_address[1], raw)]
    assert statuses == [(200, INDEX), (200, SITE_FILES["app.css"].encode())]


@pytest.mark.parametrize(
    "extra,status",
    [
        (f"Content-Length: {len(SMUGGLED)}\r\nTransfer-Encoding: chunked\r\n", 400),  # CL.TE / TE.CL
        ("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n", 400),
        ("Content-Length: 5\r\nContent-Length: 7\r\n", 400),
        ("Content-Length: -1\r\n", 400),
        ("Content-Length: 0x10\r\n", 400),
        ("Content-Length: +5\r\n", 400),
        ("Transfer-Encoding: gzip, chunked\r\n", 400),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", 400),
        ("Transfer-Encoding: xchunked\r\n", 400),
        ("Content-Length: 99999999999999999999\r\n", 413),
    ],
)
def test_conflicting_or_malformed_framing_is_400_and_closes(srv, extra, status):
    raw = get(extra=extra) + SMUGGLED
    responses = exchange(srv.server_address[1], raw)
    assert [r[0] for r in responses] == [status], responses  # the smuggled request got nothing
    assert responses[0][1].get("connection") == "close"


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\n" + SMUGGLED,
        b"5\r\nabcdefgh\r\n0\r\n\r\n" + SMUGGLED,
        b"ffffffff\r\n" + SMUGGLED,
        b"1;" + b"x" * 2000 + b"\r\n" + SMUGGLED,
    ],
)
def test_a_malformed_or_oversized_chunked_body_closes_the_connection(srv, body):
    """The request is answered; its body then fails to parse, so the connection closes: nothing after it runs."""
    responses = exchange(srv.server_address[1], get(extra="Transfer-Encoding: chunked\r\n") + body + SMUGGLED)
    assert [(s, b) for s, _, b in responses] == [(200, INDEX)], responses


def test_a_body_shorter_than_announced_is_answered_then_closed_not_a_hang(srv):
    responses = exchange(srv.server_address[1], get(extra="Content-Length: 500\r\n") + SMUGGLED)
    assert [(s, b) for s, _, b in responses] == [(200, INDEX)]


def test_the_answer_does_not_wait_for_an_announced_body(srv):
    with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=20) as sock:
        sock.sendall(get(extra="Content-Length: 1000\r\n") + SMUGGLED)  # 1000 announced, fewer sent, no EOF
        data = b""
        while not data.endswith(INDEX):
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.count(b"HTTP/1.1") == 1


# ------------------------------------------------------------------ property: Host values and header sets

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_ALLOWED_NAME = re.compile(
    rf"(?:localhost\.?|127\.{_OCTET}\.{_OCTET}\.{_OCTET}|\[::1\]|\[::ffff:127\.{_OCTET}\.{_OCTET}\."
    rf"{_OCTET}\])(?::([0-9]{{0,5}}))?",
    re.IGNORECASE,
)


def oracle_allows(value: str, port: int) -> bool:
    """The rule of docs/hardening.md, written independently of webserver.guard (a subset: the forms fuzzed here)."""
    m = _ALLOWED_NAME.fullmatch(value.strip(" \t"))
    return bool(m) and (not m.group(1) or int(m.group(1)) == port)


def _hosts(port: int):
    names = st.sampled_from(
        [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "127.0.0.1",
            "127.1.2.3",
            "[::1]",
            "[::ffff:127.0.0.5]",
            "evil.example",
            "localhost.evil",
            "10.1.1.1",
            "[::2]",
            "0.0.0.0",
            "127.0.0.1.evil",
            "127.256.0.1",
            "loca1host",
            "[::1",
            "::1",
            "",
            "a b",
            "127.0.0.1@evil",
        ]
    )
    ports = st.sampled_from(["", f":{port}", ":", f":{port + 1}", ":0", ":99999", ":abc", f":{port}:{port}"])
    junk = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=24)
    return st.tuples(names, ports).map("".join) | junk


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_host_values_are_answered_exactly_when_allowed(srv, data):
    port = srv.server_address[1]
    value = data.draw(_hosts(port))
    responses = exchange(port, get(host=value))
    assert len(responses) == 1, responses
    status, _, body = responses[0]
    if oracle_allows(value, port):
        assert (status, body) == (200, INDEX), value
    else:
        assert status in (400, 403) and INDEX not in body, (value, status)


_HEADER = st.sampled_from(
    [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Expect",
        "X-Forwarded-Host",
        "Content-Type",
        "Origin",
        "host",
        "Host ",
        " Host",
        "X-A",
    ]
)
_VALUE = st.sampled_from(
    [
        "127.0.0.1",
        "evil.example",
        "0",
        "5",
        "chunked",
        "close",
        "keep-alive",
        "100-continue",
        "-1",
        "",
        "1, 2",
        "identity",
        " chunked",
    ]
) | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers=st.lists(st.tuples(_HEADER, _VALUE), max_size=6), body=st.binary(max_size=40))
def test_fuzzed_header_sets_never_5xx_never_hang_and_200_only_for_an_allowed_host(srv, headers, body):
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
    responses = exchange(srv.server_address[1], get(host=None, extra=extra) + body + SMUGGLED)
    assert responses, "no answer at all"
    assert all(s < 500 for s, _, _ in responses), responses  # an unknown method is a 405, not a 501
    hosts = [v for k, v in headers if k == "Host" or k == "host"]
    if responses[0][0] == 200:
        assert len(hosts) == 1 and oracle_allows(hosts[0], srv.server_address[1]), headers
    assert len(responses) <= 2, responses  # the request, and at most the bytes after it read as one more
