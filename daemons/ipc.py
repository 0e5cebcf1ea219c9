"""How the pool's processes talk: Unix sockets in LOCAL_DIR, length-prefixed JSON.

Wire format: every message is a 4-byte big-endian length, then that many
bytes of UTF-8 JSON.  A request is ``{"cmd": name, "args": {...}}``.  A reply
is one of

    {"ok": result}                       request/reply
    {"items": [...]} ... {"end": result} streaming (query, history, watch)
    {"err": [kind, message, detail]}     failure (below)

An upload (``call_upload``: a submission too big for one message) is a
request with ``"upload": true``; the server answers ``{"more": true}`` when
its handler starts reading, and the client then sends ``{"chunk": ...}``
messages and ``{"end": true}`` before the reply.  The handler gets them as
the ``upload`` argument (``Upload``); if it answers without reading them
(e.g. a retried submit already committed) the reply comes at once.

A failure names the exception's class: ours (every ``JobledgerError`` of
eventcore/errors.py and the daemons) or one of a few built-ins.  ``detail``
holds its classes' names, most specific first, and its data attributes, so
the client re-raises the same class carrying the same data (a
``SubmitError`` with its line, an ``InvalidTransition`` with its status),
or the nearest class it knows.  Anything else is an unexpected failure:
the server logs it and the client gets an ``HTCondorException``.

Security: sockets live in LOCAL_DIR/run (mode 0700) and every accepted
connection is checked with SO_PEERCRED: a peer with another uid is refused
before a byte is read.  Addresses are HTCondor-shaped sinful strings
``<127.0.0.1:0?sock=/path/to/x.sock>`` so they fit in ``MyAddress``.

Socket paths longer than the kernel's limit (108 bytes) are reached through
``/proc/self/fd/<dirfd>/<name>``, so deep LOCAL_DIRs work too.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import socket
import struct
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from jobledger.eventcore.errors import HTCondorException, HTCondorIOError, JobledgerError

_HEADER = struct.Struct(">I")
MAX_MESSAGE = 1 << 30
DEFAULT_TIMEOUT = 30.0
UPLOAD_IDLE = 60.0     # seconds a server waits for the next chunk of an upload
IDLE_WORKER = 30.0     # seconds a server thread waits for another connection
_PEERCRED = struct.Struct("3i")


class ConnectionLost(HTCondorIOError):
    """The daemon could not be reached, or the connection broke before its reply:
    the request may or may not have been carried out (a submit retries with its token)."""


class PeerRefused(HTCondorException):
    """A connection from another user (or from nowhere we trust) was refused."""


def sinful(path: str, endpoint: tuple[str, int] | None = None) -> str:
    """``<127.0.0.1:0?sock=PATH>``: an HTCondor-shaped address naming a Unix socket;
    with ``endpoint`` (host, port) ``<HOST:PORT?sock=PATH>``, the daemon also being
    reachable through the pool's shared port there (``daemons.shared_port``)."""
    host, port = endpoint or ("127.0.0.1", 0)
    host = f"[{host}]" if ":" in host else host
    return f"<{host}:{port}?sock={urllib.parse.quote(os.path.abspath(path), safe='/')}>"


@functools.lru_cache(maxsize=256)
def parse_address(address: str) -> tuple[str, int, str | None]:
    """(host, port, socket path or None) of a sinful string or ``host[:port]``;
    port 0 means a local socket only.  (Kept for the few addresses a daemon calls
    again and again: the schedd tells its startd of every handed-over claim.)"""
    text = address.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    where, _, query = text.partition("?")
    path = None
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key == "sock" and value:
            path = urllib.parse.unquote(value)
    host, colon, port = where.rpartition(":")
    if not colon:
        host, port = where, "9618" if path is None else "0"
    try:
        number = int(port)
    except ValueError:
        raise HTCondorException(f"address {address!r} has no port number") from None
    return host.strip("[]"), number, path


def socket_path(address: str) -> str:
    """The socket path inside a sinful string (``HTCondorException`` if there is none)."""
    text = address.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    _, _, query = text.partition("?")
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key == "sock" and value.startswith("/"):
            return urllib.parse.unquote(value)
    raise HTCondorException(f"address {address!r} names no local daemon socket")


@contextmanager
def _short_path(path: str):
    """A path the kernel accepts for ``path`` (``/proc/self/fd/N/name`` when too long)."""
    if len(os.fsencode(path)) < 100:
        yield path
        return
    folder, name = os.path.split(path)
    fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


_ENCODER = json.JSONEncoder(separators=(",", ":"))   # (one for every message: json.dumps
                                                    # with separators builds one per call)


def send_message(sock: socket.socket, message) -> None:
    body = _ENCODER.encode(message).encode("utf-8")
    sock.sendall(_HEADER.pack(len(body)) + body)


def recv_message(sock: socket.socket, limit: int = MAX_MESSAGE):
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size > limit:
        raise ConnectionError(f"message of {size} bytes is too large (at most {limit})")
    return json.loads(_recv_exact(sock, size))


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket."""
    return _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))


# -- client side -------------------------------------------------------------

_BUILTINS: dict[str, type[Exception]] = {
    "ValueError": ValueError, "TypeError": TypeError, "KeyError": KeyError,
    "NotImplementedError": NotImplementedError,
}


def _our_classes() -> dict[str, type[Exception]]:
    """Every loaded subclass of ``JobledgerError`` (and the root), by class name."""
    found, todo = {}, [JobledgerError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.__name__, cls)
        todo.extend(cls.__subclasses__())
    return found


def _raise_remote(kind: str, message: str, detail: dict | None = None):
    known = {**_BUILTINS, **_our_classes()}
    names = (detail or {}).get("classes") or [kind]
    cls = next((known[name] for name in names if name in known), HTCondorException)
    exc = cls.__new__(cls)
    exc.args = (message,)
    if issubclass(cls, JobledgerError):
        exc.__dict__.update((detail or {}).get("attrs", {}))
    raise exc


def connect(address: str, timeout: float | None = DEFAULT_TIMEOUT) -> socket.socket:
    """An open connection to the daemon at ``address`` (``HTCondorException`` if unreachable).

    A daemon's Unix socket when this process can reach it; else, when the address has
    a port, the pool's shared port there over TLS (``daemons.netclient``), for the
    daemon the socket's name says (``host:port`` alone means the collector)."""
    if not over_network(address):
        host, port, path = parse_address(address)
        return _connect_unix(address, path or socket_path(address), timeout)
    host, port, path = parse_address(address)
    target = os.path.basename(path or "collector")
    target = target[:-5] if target.endswith(".sock") else target
    from jobledger.daemons import netclient
    return netclient.connect(host, port, target, timeout)


def over_network(address: str) -> bool:
    """Does ``connect`` reach ``address`` through the pool's port (a client sharing no
    file system with the daemon) rather than its Unix socket?  ``HTCondorException``
    for an address that is neither."""
    if "sock=/" in address and ":0?" in address:
        return False
    host, port, path = parse_address(address)
    if path is not None and path.startswith("/") and (port == 0 or _ours(path)):
        return False
    if port == 0:
        raise HTCondorException(f"address {address!r} names no local daemon socket")
    return True


def _ours(path: str) -> bool:
    """Is ``path`` a socket of the pool this process is configured for (in its RUN)?
    A client of another machine, or of no pool, goes through the network instead."""
    from jobledger.daemons.netclient import lookup
    run = lookup("RUN")
    if not run:
        return False
    folder = os.path.dirname(path)
    return folder == os.path.abspath(run) or os.path.realpath(folder) == os.path.realpath(run)


def _connect_unix(address: str, path: str, timeout: float | None) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with _short_path(path) as short:
            sock.connect(short)
    except OSError as exc:
        sock.close()
        raise ConnectionLost(f"cannot reach daemon at {address}: {exc.strerror or exc}") from exc
    return sock


def _reply(sock: socket.socket, address: str, request=None):
    """Send ``request`` (if any), then read a reply; ``ConnectionLost`` if the connection fails."""
    try:
        if request is not None:
            send_message(sock, request)
        return recv_message(sock)
    except (OSError, ValueError) as exc:
        raise ConnectionLost(f"failed talking to daemon at {address}: {exc}") from exc


def _result(reply):
    if "err" in reply:
        _raise_remote(*reply["err"])
    return reply.get("ok")


def call(address: str, cmd: str, timeout: float | None = DEFAULT_TIMEOUT, **args):
    """Send one request and return the result of its reply."""
    return call_later(address, cmd, timeout, **args)()


def call_later(address: str, cmd: str, timeout: float | None = DEFAULT_TIMEOUT, **args) -> Callable[[], object]:
    """Send one request now; the function returned reads its reply (and closes the
    connection), so that the caller works while the daemon does.  Either step raises as
    ``call`` does."""
    sock = connect(address, timeout)
    try:
        send_message(sock, {"cmd": cmd, "args": args})
    except (OSError, ValueError) as exc:
        sock.close()
        raise ConnectionLost(f"failed talking to daemon at {address}: {exc}") from exc

    def result():
        try:
            reply = _reply(sock, address)
        finally:
            sock.close()
        return _result(reply)
    return result


def call_upload(address: str, cmd: str, chunks: Iterable, timeout: float | None = DEFAULT_TIMEOUT,
                **args):
    """``call``, with ``chunks`` (JSON-able values, made as they are sent) sent
    after the request once the server asks for them.  An exception raised by
    ``chunks`` itself goes to the caller as it is (the server, its connection
    closed midway, keeps nothing of the upload)."""
    sock = connect(address, timeout)
    try:
        reply = _reply(sock, address, {"cmd": cmd, "args": args, "upload": True})
        if "more" in reply:
            _send_chunks(sock, chunks)
            reply = _reply(sock, address)
    finally:
        sock.close()
    return _result(reply)


def _send_chunks(sock: socket.socket, chunks: Iterable) -> None:
    """Each chunk, then the end mark; stops early (quietly) when the server
    stops reading: its reply says why."""
    for chunk in chunks:        # what ``chunks`` raises goes to the caller (an OSError too)
        try:
            send_message(sock, {"chunk": chunk})
        except OSError:
            return
    try:
        send_message(sock, {"end": True})
    except OSError:
        return


def stream(address: str, cmd: str, timeout: float | None = DEFAULT_TIMEOUT, **args) -> Iterator:
    """Send one request and yield the items of its streamed reply."""
    sock = connect(address, timeout)
    try:
        send_message(sock, {"cmd": cmd, "args": args})
        while True:
            try:
                reply = recv_message(sock)
            except (OSError, ValueError) as exc:
                raise ConnectionLost(f"failed talking to daemon at {address}: {exc}") from exc
            if "items" in reply:
                yield from reply["items"]
            elif "err" in reply:
                _raise_remote(*reply["err"])
            else:
                return
    finally:
        sock.close()


# -- server side -------------------------------------------------------------

class Streamed:
    """A handler's result that goes out as batches of items (``stream`` on the client)."""

    def __init__(self, batches: Iterable[list]):
        self.batches = batches


class Upload:
    """The chunks a client sends after an upload request (``call_upload``).

    Iterating asks the client for them and yields each until the client's
    end mark; a client gone midway raises ``ConnectionError``, one silent for
    ``idle`` seconds (the server's ``upload_idle``) ``TimeoutError`` (both
    ``OSError``s: whatever the handler was doing with the chunks must be
    undone).  Read once.
    """

    def __init__(self, conn: socket.socket, idle: float = UPLOAD_IDLE):
        self._conn = conn
        self._idle = idle
        self._read = False

    def __iter__(self) -> Iterator:
        if self._read:
            raise RuntimeError("an upload is read once")
        self._read = True
        send_message(self._conn, {"more": True})
        self._conn.settimeout(self._idle)
        while True:
            message = recv_message(self._conn)
            if "end" in message:
                return
            yield message["chunk"]


Handler = Callable[..., object]


class Server:
    """A threaded Unix-socket server: one thread per connection, handlers by name.

    A thread that has answered waits up to ``IDLE_WORKER`` seconds for the next
    connection before it ends, so a busy pool does not start a thread per request.

    ``handlers[cmd](peer, **args)`` returns a JSON-able result, or a
    ``Streamed``.  Exceptions go back to the client as ``{"err": ...}``;
    ``unexpected`` (if given) is told about those that are not ours.  An
    upload's client silent for ``upload_idle`` seconds between chunks is dropped.
    """

    def __init__(self, path: str, handlers: dict[str, Handler], uid: int | None = None,
                 unexpected: Callable[[BaseException], None] | None = None,
                 upload_idle: float = UPLOAD_IDLE):
        self.path = path
        self.address = sinful(path)
        self.handlers = handlers
        self.uid = os.getuid() if uid is None else uid
        self.unexpected = unexpected
        self.upload_idle = upload_idle
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._handoff: queue.SimpleQueue = queue.SimpleQueue()   # connections for idle threads
        self._idle = 0            # threads waiting on _handoff (or about to)
        self._idle_lock = threading.Lock()

    def bind(self) -> "Server":
        if os.path.exists(self.path):
            os.unlink(self.path)  # a stale socket of a dead predecessor
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with _short_path(self.path) as short:
            sock.bind(short)
        os.chmod(self.path, 0o600)
        sock.listen(256)
        self._sock = sock
        return self

    def start(self, name: str = "ipc-server") -> "Server":
        if self._sock is None:
            self.bind()
        self._thread = threading.Thread(target=self._accept_loop, name=name, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        with self._idle_lock:
            self._closing.set()
            for _ in range(self._idle):
                self._handoff.put(None)     # the idle threads end
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        if self._thread is not None:
            self._thread.join(5)

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            pid, uid, _ = peer_credentials(conn)
            if uid != self.uid:
                conn.close()  # another user: refused before reading anything
                continue
            with self._idle_lock:
                if self._idle:
                    self._idle -= 1
                    self._handoff.put((conn, pid, uid))
                    continue
            threading.Thread(target=self._work, args=((conn, pid, uid),), name="ipc-conn",
                             daemon=True).start()

    def _work(self, job) -> None:
        """Serve ``job``, then the connections handed over while idle, until none comes."""
        while job is not None:
            self._serve(*job)
            with self._idle_lock:
                if self._closing.is_set():
                    return
                self._idle += 1
            try:
                job = self._handoff.get(timeout=IDLE_WORKER)
            except queue.Empty:
                with self._idle_lock:   # one may have been handed over just now
                    try:
                        job = self._handoff.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        job = None

    def _serve(self, conn: socket.socket, pid: int, uid: int) -> None:
        with conn:
            try:
                request = recv_message(conn)
            except (OSError, ValueError):
                return
            peer = {"pid": pid, "uid": uid}
            if isinstance(request, dict) and isinstance(request.get("as"), dict):
                # from the pool's shared port (same uid): the identity it authenticated
                given = request["as"]
                peer.update(user=str(given.get("user", "")), host=str(given.get("host", "")),
                            super=bool(given.get("super")),
                            scopes=given["scopes"] if isinstance(given.get("scopes"), list) else None)
            try:
                self._answer(conn, request, peer)
            except OSError:
                pass  # the client went away

    def _answer(self, conn: socket.socket, request, peer: dict) -> None:
        try:
            cmd = request["cmd"]
            handler = self.handlers.get(cmd)
            if handler is None:
                raise HTCondorException(f"unknown command {cmd!r}")
            args = request.get("args", {})
            if request.get("upload"):
                args = dict(args, upload=Upload(conn, self.upload_idle))
            result = handler(peer, **args)
            if isinstance(result, Streamed):
                for batch in result.batches:
                    if batch:
                        send_message(conn, {"items": batch})
                send_message(conn, {"end": None})
            else:
                send_message(conn, {"ok": result})
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the client
            if isinstance(exc, OSError) and not isinstance(exc, JobledgerError):
                raise  # the connection failed (ours that are OSErrors, e.g. TrackerTimeout, go back)
            kind = _kind_of(exc)
            if kind is None and self.unexpected is not None:
                self.unexpected(exc)
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            send_message(conn, {"err": [kind or "HTCondorException", str(message), _detail(exc, kind)]})


def _kind_of(exc: BaseException) -> str | None:
    """The class name the client re-raises ``exc`` as; None for an unexpected failure."""
    if isinstance(exc, JobledgerError):
        return type(exc).__name__
    for kind, cls in _BUILTINS.items():
        if isinstance(exc, cls):
            return kind
    return None


def _detail(exc: BaseException, kind: str | None) -> dict:
    """What the client needs to rebuild ``exc``: its classes' names and its data."""
    if not isinstance(exc, JobledgerError):
        return {"classes": [kind or "HTCondorException"]}
    classes = [cls.__name__ for cls in type(exc).__mro__ if issubclass(cls, JobledgerError)]
    attrs = {name: (value if value is None or isinstance(value, (str, int, float, bool)) else str(value))
             for name, value in vars(exc).items()}
    return {"classes": classes, "attrs": attrs}
