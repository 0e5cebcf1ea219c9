"""The static report: one HTML file that pictures a run with no server and no network.

``report_html(source, position=None, audit=None)`` inlines the page's styles and
script and the data they draw: the picture at the position (default: the head),
the audit verdict when one is given (``jobledger.web.verdict``),
the DAG graphs, each job's story (the drawer) when the run has at most
``STORY_JOBS`` jobs, and pictures at up to ``FRAMES`` positions for the
replay slider when it has at most ``FRAME_JOBS``.  Nothing in it names a
host: it opens from disk, attached to an issue or mailed.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["report_html", "STORY_JOBS", "FRAME_JOBS", "FRAMES"]

STATIC = Path(__file__).parent / "static"
STORY_JOBS = 500
FRAME_JOBS = 300
FRAMES = 60


def _script_json(data) -> str:
    """JSON safe inside a <script> element."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def report_data(source, position: int | None = None, audit: dict | None = None) -> dict:
    """What the report embeds (see the module docstring)."""
    snap = source.at(position, None)
    head = snap["header"]["position"]
    snap["head"] = head
    jobs = snap["jobs"]
    data = {"picture": snap, "dags": {}, "stories": {}, "frames": [], "audit": audit}
    for cluster in snap["dags"]:
        graph = source.dag(int(cluster))
        if graph is not None:
            data["dags"][cluster] = graph
    if len(jobs) <= STORY_JOBS:
        for job in jobs:
            story = source.story(job["c"], job["p"], head)
            if story is not None:
                data["stories"][job["id"]] = story
    if len(jobs) <= FRAME_JOBS and head > 0:
        step = max(1, head // FRAMES)
        cuts = sorted(set(range(0, head, step)) | {head})
        data["frames"] = [source.at(cut, None) for cut in cuts if cut < head] + [snap]
    return data


def report_html(source, position: int | None = None, audit: dict | None = None) -> str:
    """The report's HTML text; ``audit`` is the verdict to show (None: "audit: not run")."""
    page = (STATIC / "index.html").read_text("utf-8")
    css = (STATIC / "app.css").read_text("utf-8")
    js = (STATIC / "app.js").read_text("utf-8")
    data = _script_json(report_data(source, position, audit))
    page = page.replace('<link rel="stylesheet" href="/static/app.css">', f"<style>\n{css}\n</style>")
    page = page.replace('<script src="/static/app.js"></script>',
                        f'<script>window.JL_STATIC = {data};</script>\n<script>\n{js}\n</script>')
    return page
