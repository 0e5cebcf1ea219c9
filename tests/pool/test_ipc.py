"""The pool's socket protocol (daemons/ipc.py): framing, errors, streaming, peer check."""

from __future__ import annotations

import os

import pytest

from jobledger.daemons import ipc
from jobledger.eventcore.errors import (ClassAdParseError, HTCondorException, InvalidTransition, MacroError,
                              SubmitError, TrackerTimeout)
from jobledger.eventcore.status import JobStatus
from tests.pool.conftest import wait_until


@pytest.fixture
def server(tmp_path):
    handlers = {
        "echo": lambda peer, **args: {"args": args, "uid": peer["uid"]},
        "fail": lambda peer: (_ for _ in ()).throw(ValueError("bad value")),
        "missing": lambda peer: {}["nope"],
        "boom": lambda peer: 1 / 0,
        "refuse": lambda peer, which: (_ for _ in ()).throw(OURS[which]),
        "many": lambda peer, n: ipc.Streamed([list(range(i, min(i + 10, n))) for i in range(0, n, 10)]),
    }
    seen = []
    srv = ipc.Server(str(tmp_path / "d.sock"), handlers, unexpected=seen.append).start()
    srv.seen = seen
    yield srv
    srv.close()


def test_request_reply(server):
    assert ipc.call(server.address, "echo", a=1, b=[1, "x"]) == {"args": {"a": 1, "b": [1, "x"]},
                                                                 "uid": os.getuid()}


def test_errors_come_back_as_their_kind(server):
    with pytest.raises(ValueError, match="bad value"):
        ipc.call(server.address, "fail")
    with pytest.raises(KeyError):
        ipc.call(server.address, "missing")
    with pytest.raises(HTCondorException):
        ipc.call(server.address, "boom")
    assert len(server.seen) == 1 and isinstance(server.seen[0], ZeroDivisionError)
    with pytest.raises(HTCondorException, match="unknown command"):
        ipc.call(server.address, "nonsense")


OURS = {
    "submit": SubmitError("bad queue statement", 3, "queue x y", "job.sub"),
    "macro": MacroError("$CHOICE index 9 out of range", 2, "$CHOICE(9, a)"),
    "transition": InvalidTransition(JobStatus.COMPLETED, "EXECUTE", "3.1"),
    "parse": ClassAdParseError("expected an expression", "ClusterId ==", 12, "constraint"),
    "timeout": TrackerTimeout(2.5, 7),
    "htcondor": HTCondorException("cluster 9 was not reserved by this submitter"),
}


@pytest.mark.parametrize("which", sorted(OURS))
def test_our_errors_come_back_as_their_class_with_their_data(server, which):
    sent = OURS[which]
    with pytest.raises(type(sent)) as caught:
        ipc.call(server.address, "refuse", which=which)
    got = caught.value
    assert type(got) is type(sent) and str(got) == str(sent)
    for name, value in vars(sent).items():
        assert getattr(got, name) == (value if not hasattr(value, "value") else value.value), name
    assert not server.seen  # ours are expected failures: nothing logged as unexpected


def test_streaming(server):
    assert list(ipc.stream(server.address, "many", n=35)) == list(range(35))
    assert list(ipc.stream(server.address, "many", n=0)) == []


def test_sinful_round_trip(tmp_path):
    path = str(tmp_path / "a b&c.sock")
    address = ipc.sinful(path)
    assert address.startswith("<") and address.endswith(">")
    assert ipc.socket_path(address) == path
    with pytest.raises(HTCondorException):
        ipc.socket_path("<1.2.3.4:9618>")


def test_unreachable_is_htcondor_exception(tmp_path):
    with pytest.raises(HTCondorException, match="cannot reach"):
        ipc.call(ipc.sinful(str(tmp_path / "none.sock")), "echo")


def test_long_socket_path(tmp_path):
    deep = tmp_path / ("x" * 60) / ("y" * 60)
    deep.mkdir(parents=True)
    srv = ipc.Server(str(deep / "long.sock"), {"echo": lambda peer, **a: a}).start()
    try:
        assert ipc.call(srv.address, "echo", v=3) == {"v": 3}
    finally:
        srv.close()


def test_other_uid_is_refused(tmp_path):
    # A server that trusts only another uid refuses us before reading a byte.
    srv = ipc.Server(str(tmp_path / "s.sock"), {"echo": lambda peer, **a: a}, uid=os.getuid() + 1).start()
    try:
        with pytest.raises(HTCondorException):
            ipc.call(srv.address, "echo", timeout=5)
    finally:
        srv.close()


def test_a_thread_that_answered_serves_the_next_connection(tmp_path):
    import threading
    release = threading.Event()
    handlers = {"who": lambda peer: threading.get_ident(),
                "hold": lambda peer: release.wait(10)}
    srv = ipc.Server(str(tmp_path / "w.sock"), handlers).start()
    try:
        first = ipc.call(srv.address, "who")
        wait_until(lambda: srv._idle == 1, 10, what="the thread to wait for the next connection")
        assert ipc.call(srv.address, "who") == first      # no new thread per request
        # a request that blocks keeps its thread: the next one is served meanwhile
        held = threading.Thread(target=ipc.call, args=(srv.address, "hold"))
        held.start()
        assert isinstance(ipc.call(srv.address, "who"), int)
        release.set()
        held.join(10)
    finally:
        release.set()
        srv.close()


def test_a_silent_uploading_client_is_dropped_after_the_idle_timeout(tmp_path):
    """A client that asks to upload, then sends nothing, is dropped after the
    server's ``upload_idle`` (made short here, instead of the minute): the handler
    sees ``TimeoutError``, the client ``ConnectionLost``, and the server serves on."""
    import threading
    taken, failed, dropped = [], [], threading.Event()

    def take(peer, upload):
        try:
            for chunk in upload:
                taken.append(chunk)
        except OSError as exc:
            failed.append(exc)
            dropped.set()
            raise
        return len(taken)

    def silent():
        # nothing until the server has given up on us (an event, not a time)
        assert dropped.wait(60), "the server never dropped the silent client"
        yield "too late"

    srv = ipc.Server(str(tmp_path / "u.sock"), {"take": take, "echo": lambda peer, **a: a},
                     upload_idle=0.2).start()
    try:
        with pytest.raises(ipc.ConnectionLost):
            ipc.call_upload(srv.address, "take", silent())
        assert taken == [] and len(failed) == 1 and isinstance(failed[0], TimeoutError)
        assert ipc.call(srv.address, "echo", v=1) == {"v": 1}
        srv.upload_idle = ipc.UPLOAD_IDLE      # a client that keeps talking is served in full
        assert ipc.call_upload(srv.address, "take", iter(["a", "b"])) == 2
        assert taken == ["a", "b"] and len(failed) == 1
    finally:
        dropped.set()
        srv.close()
