"""The web view's HTTP side: a read-only Starlette app over a ``Source``.

Routes (all GET):

``/``                     the page (``static/index.html``), its script and styles under ``/static``
``/api/picture``          the picture; ``?at=N`` as of journal position N, ``?as_of=T`` of moment T
``/api/job/C.P``          the job drawer (``?at=N``)
``/api/dag/C``            the DAG file of DAGMan job C: nodes and edges
``/api/audit``            the audit verdict (``daemons.audit``), computed once per journal head
``/api/events``           server-sent events: ``id`` is the journal position; ``data`` what
                          changed after the position the browser last saw (``Last-Event-ID``,
                          or ``?since=N``), so a reconnecting browser resumes exactly
``/report.html``          the static report (one self-contained file, opens offline)
``/trace.json``           the Chrome trace (Perfetto) of the picture (``?at=N``)

Only hosts named loopback or the address served on are answered (a page
elsewhere cannot reach the server by rebinding a name to 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from jobledger.eventcore.errors import JobledgerError
from jobledger.eventcore.projections.trace import chrome_trace
from jobledger.web.report import report_html
from jobledger.web.verdict import audit_verdict

__all__ = ["make_app", "STATIC", "POLL_SECONDS", "KEEPALIVE_SECONDS"]

STATIC = Path(__file__).parent / "static"
POLL_SECONDS = 0.05         # how often the follower looks at the journal's head
KEEPALIVE_SECONDS = 15.0    # a comment line on a quiet stream (proxies, dead peers)
MAX_POSITION = 2**63 - 1


class Bad(Exception):
    """A request's bad argument: a 400 naming it."""


def _position(request: Request, name: str = "at") -> int | None:
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    if not text.isdigit() or int(text) > MAX_POSITION:
        raise Bad(f"{name}={text[:40]!r} is not a journal position (0..{MAX_POSITION})")
    return int(text)


def _moment(request: Request) -> float | None:
    text = request.query_params.get("as_of")
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise Bad(f"as_of={text[:40]!r} is not Unix seconds") from None
    if not (0 <= value < 253402300800):
        raise Bad(f"as_of={text[:40]!r} is out of range")
    return value


def _json(data, status: int = 200) -> Response:
    body = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return Response(body, status_code=status, media_type="application/json",
                    headers={"Cache-Control": "no-store"})


class Follower:
    """Wakes the event streams when the journal grows (one poll loop for all)."""

    def __init__(self, source, audit_dir: str | None):
        self.source = source
        self.audit_dir = audit_dir
        self.changed = asyncio.Condition()
        self.task: asyncio.Task | None = None
        self._audit: tuple[int, dict] | None = None

    async def run(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                head = await asyncio.to_thread(self.source.head)
                if head > self.source.live.position:
                    await asyncio.to_thread(self.source.catch_up)
                    async with self.changed:
                        self.changed.notify_all()
            except JobledgerError:
                continue        # the journal is being created or rotated: look again

    async def audit(self) -> dict:
        head = self.source.live.position
        if self._audit is not None and self._audit[0] == head:
            return self._audit[1]
        verdict = await asyncio.to_thread(audit_verdict, self.audit_dir, head)
        self._audit = (head, verdict)
        return verdict


def make_app(source, audit_dir: str | None = None, allowed_hosts: list[str] | None = None) -> Starlette:
    """The app over ``source`` (``jobledger.web.source.Source``)."""
    follower = Follower(source, audit_dir)

    async def index(request):
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def api_picture(request):
        at, as_of = _position(request), _moment(request)
        if at is not None and as_of is not None:
            raise Bad("give at or as_of, not both")
        snap = await asyncio.to_thread(source.at, at, as_of)
        snap["head"] = source.live.position
        return _json(snap)

    async def api_job(request):
        cluster, dot, proc = request.path_params["job"].partition(".")
        if not (cluster.isdigit() and proc.isdigit() and dot) or int(cluster) >= 2**31 or int(proc) >= 2**31:
            raise Bad(f"{request.path_params['job'][:40]!r} is not a job id CLUSTER.PROC")
        story = await asyncio.to_thread(source.story, int(cluster), int(proc), _position(request))
        if story is None:
            return _json({"error": f"no job {cluster}.{proc} in the journal at that position"}, 404)
        return _json(story)

    async def api_dag(request):
        text = request.path_params["cluster"]
        if not text.isdigit() or int(text) >= 2**31:
            raise Bad(f"{text[:40]!r} is not a cluster id")
        graph = await asyncio.to_thread(source.dag, int(text))
        if graph is None:
            return _json({"error": f"cluster {text} is no DAGMan job of this journal"}, 404)
        return _json(graph)

    async def api_audit(request):
        return _json(await follower.audit())

    async def api_events(request):
        last = request.headers.get("last-event-id")
        since = int(last) if last and last.isdigit() else _position(request, "since")
        if since is None:
            since = source.live.position
        return StreamingResponse(_stream(request, since), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def _stream(request, since):
        yield "retry: 500\n\n"
        while not await request.is_disconnected():
            if since > source.live.position:
                yield f"event: reset\ndata: {json.dumps({'head': source.live.position})}\n\n"
                since = source.live.position
            if source.live.position > since:
                position, delta = await asyncio.to_thread(source.delta, since)
                delta["head"] = position
                yield f"id: {position}\nevent: delta\ndata: {json.dumps(delta, separators=(',', ':'))}\n\n"
                since = position
                continue
            async with follower.changed:
                try:
                    await asyncio.wait_for(follower.changed.wait(), KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    yield ": keepalive\n\n"

    async def report(request):
        html = await asyncio.to_thread(report_html, source, _position(request), await follower.audit())
        return HTMLResponse(html, headers={"Content-Disposition": 'inline; filename="jobledger-report.html"'})

    async def trace(request):
        snap = await asyncio.to_thread(source.at, _position(request), None)
        return _json(chrome_trace(snap))

    async def bad(request, exc):
        return _json({"error": str(exc)}, 400)

    async def failed(request, exc):
        return _json({"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}, 500)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        follower.task = asyncio.create_task(follower.run())
        try:
            yield
        finally:
            follower.task.cancel()

    routes = [
        Route("/", index), Route("/api/picture", api_picture), Route("/api/job/{job}", api_job),
        Route("/api/dag/{cluster}", api_dag), Route("/api/audit", api_audit),
        Route("/api/events", api_events), Route("/report.html", report), Route("/trace.json", trace),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    hosts = ["127.0.0.1", "localhost", "[::1]", "::1"] + list(allowed_hosts or [])
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
                     exception_handlers={Bad: bad, JobledgerError: failed},
                     lifespan=lifespan)


def serve(app, host: str, port: int, ready=None) -> None:
    """Run ``app`` with uvicorn until interrupted; ``ready(url)`` once it listens."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)

    async def main():
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                return await task
            await asyncio.sleep(0.01)
        if ready is not None:
            sock = server.servers[0].sockets[0].getsockname()
            shown = f"[{sock[0]}]" if ":" in sock[0] else sock[0]
            ready(f"http://{shown}:{sock[1]}/")
        await task

    asyncio.run(main())


class Running:
    """A server on a thread of this process (tests, benchmarks): ``url``, ``stop()``."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0):
        import threading

        import uvicorn

        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                     access_log=False, lifespan="on",
                                                     timeout_graceful_shutdown=1))
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="web-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(30) or not self._server.started:
            raise RuntimeError("the web server did not start")
        sock = self._server.servers[0].sockets[0].getsockname()
        self.url = f"http://{sock[0]}:{sock[1]}/"

    def _run(self) -> None:
        async def main():
            task = asyncio.create_task(self._server.serve())
            while not self._server.started and not task.done():
                await asyncio.sleep(0.01)
            self._ready.set()
            await task
        try:
            asyncio.run(main())
        finally:
            self._ready.set()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
