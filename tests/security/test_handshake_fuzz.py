"""Fuzz of the token handshake and its framing, without the network (a socket pair).

Whatever a client sends -- random bytes, frames of any length, JSON of any shape,
tokens cut or tampered -- the server's side of the handshake ends with a refusal
(``AuthenticationFailed``/``TokenError``) or a broken connection (``OSError``,
``ValueError``), never another exception, never a session for a bad token, and
always at once (the client's end is closed, so a server waiting for more would hang).
"""

from __future__ import annotations

import json
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobledger.daemons import idtokens, netauth
from jobledger.eventcore.errors import AuthenticationFailed, TokenError

KEY = bytes(range(40))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "POOL").write_bytes(idtokens.scramble(KEY))
    values = {"SEC_TOKEN_POOL_SIGNING_KEY_FILE": str(folder / "POOL"), "TRUST_DOMAIN": "fuzz.pool",
              "SEC_PASSWORD_DIRECTORY": str(folder)}
    return netauth.Server(values.get)


def _frame(value) -> bytes:
    body = json.dumps(value).encode()
    return struct.pack(">I", len(body)) + body


def run_server(server, incoming: bytes):
    """The server's handshake against a client that sent ``incoming`` and then closed."""
    ours, theirs = socket.socketpair()
    ours.settimeout(5)
    with ours, theirs:
        theirs.settimeout(5)
        try:
            theirs.sendall(incoming)
        except OSError:
            pass
        theirs.shutdown(socket.SHUT_WR)
        try:
            return server.handshake(ours)
        except (AuthenticationFailed, TokenError, OSError, ValueError):
            return None


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3),
                           max_leaves=8)
messages = st.dictionaries(st.sampled_from(["auth", "token", "ra", "target", "resume", "mac", "x"]),
                           json_values | st.text(max_size=60), max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=300))
def test_random_bytes_never_authenticate(server, raw):
    assert run_server(server, raw) is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=messages, second=messages)
def test_random_messages_never_authenticate(server, first, second):
    session = run_server(server, _frame(first) + _frame(second))
    assert session is None or session.user == netauth.ANONYMOUS and first.get("auth") == "ANONYMOUS"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=400), flip=st.integers(min_value=0, max_value=400))
def test_tampered_tokens_never_authenticate(server, cut, flip):
    token = idtokens.create_token("alice@fuzz.pool", "fuzz.pool", KEY + KEY)
    head, body, _ = token.split(".")
    text = f"{head}.{body}"
    chars = list(text[:cut] if cut < len(text) else text)
    if chars and flip < len(chars):
        chars[flip] = "A" if chars[flip] != "A" else "B"
    mangled = "".join(chars)
    # the client cannot answer the challenge without the signature: its proof is garbage
    incoming = _frame({"auth": "IDTOKENS", "token": mangled, "ra": "AAAA"}) + _frame({"mac": "AAAA"})
    assert run_server(server, incoming) is None


def test_oversized_and_truncated_frames_are_refused(server):
    assert run_server(server, struct.pack(">I", netauth.HANDSHAKE_LIMIT + 1) + b"x" * 100) is None
    assert run_server(server, struct.pack(">I", 1000) + b"{}") is None        # the client went away
    assert run_server(server, b"\x00\x00") is None
    nested = b"[" * 30000 + b"]" * 30000            # within the size limit, past the parser's depth
    assert run_server(server, struct.pack(">I", len(nested)) + nested) is None


def test_the_right_proof_does_authenticate(server):
    """The fuzz's refusals are not a server that refuses everything: the real client works."""
    token = idtokens.create_token("alice@fuzz.pool", "fuzz.pool", KEY + KEY, authz=["READ"])
    ours, theirs = socket.socketpair()
    found: dict = {}

    import threading
    thread = threading.Thread(target=lambda: found.update(session=server.handshake(ours)))
    thread.start()
    info = netauth.client_handshake(theirs, "fuzz", "schedd", {}.get, token)
    thread.join(10)
    ours.close()
    theirs.close()
    assert info["user"] == "alice@fuzz.pool" and found["session"].scopes == ["READ"]
    assert found["session"].target == "schedd"
