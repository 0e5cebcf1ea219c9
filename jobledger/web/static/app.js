// jobledger web: draws a run's picture (served by jobledger.web.app, or embedded in a
// static report as window.JL_STATIC).  No library, no network but the server it came from.
(function () {
  "use strict";
  const STATES = ["Idle", "Running", "Held", "Completed", "Removed", "TransferringOutput", "Suspended"];
  const STATUS = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held", 6: "TransferringOutput", 7: "Suspended"};
  const COLOR = {Idle: "#9aa5b1", Running: "#2f80ed", Held: "#f2994a", Completed: "#27ae60", Removed: "#eb5757",
                 TransferringOutput: "#9b51e0", Suspended: "#e2b93b"};
  const PART = {wait: "queue wait", in: "input transfer", exec: "execution", out: "output transfer", suspended: "suspended"};
  const SVGNS = "http://www.w3.org/2000/svg";
  const STATIC = window.JL_STATIC || null;
  const $ = (id) => document.getElementById(id);

  const state = {mode: "loading", pic: null, jobs: new Map(), series: [], dags: {}, graphs: {}, head: 0,
                 cut: 0, domain: null, widths: {}, stories: new Map(), source: null, lastId: null, drawn: 0, asOf: null};

  // ------------------------------------------------------------------ helpers --
  function el(tag, attrs, parent, text) {
    const node = document.createElementNS(SVGNS, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function h(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function clock(t) {
    if (t === null || t === undefined) return "–";
    const d = new Date(t * 1000);
    return d.toLocaleTimeString([], {hour12: false}) + "." + String(d.getMilliseconds()).padStart(3, "0").slice(0, 1);
  }
  function localInput(t) {      // seconds -> a datetime-local input's value (local time)
    const d = new Date(t * 1000), p = (n) => String(n).padStart(2, "0");
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" +
      p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
  }
  function span(s) {
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
    return (s / 3600).toFixed(1) + " h";
  }
  async function getJSON(url) {
    const r = await fetch(url, {cache: "no-store"});
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }
  function jobState(job) { return STATUS[job.st] || "Idle"; }

  // ------------------------------------------------------------------- state --
  function take(pic) {
    state.pic = pic;
    state.jobs = new Map(pic.jobs.map((j) => [j.id, j]));
    state.series = pic.series.slice();
    state.dags = pic.dags || {};
    state.cut = pic.header.position;
    if (pic.head !== undefined) state.head = Math.max(pic.head, state.cut);
    widen(pic.header);
  }
  function merge(delta) {
    for (const j of delta.jobs) state.jobs.set(j.id, j);
    const last = state.series.length ? state.series[state.series.length - 1][0] : -1;
    for (const p of delta.series) if (p[0] > last) state.series.push(p);
    if (state.series.length > 4000) state.series = state.series.filter((_, i) => i % 2 === 0 || i === state.series.length - 1);
    Object.assign(state.dags, delta.dags || {});
    state.pic.header = delta.header;
    state.cut = delta.header.position;
    widen(delta.header);
  }
  function widen(header) {
    if (header.start === null || header.start === undefined) return;
    const end = Math.max(header.time || header.start, header.start + 1);
    if (!state.domain) state.domain = [header.start, end];
    state.domain[0] = Math.min(state.domain[0], header.start);
    if (state.mode !== "replay") state.domain[1] = Math.max(state.domain[1], end);
  }

  // ------------------------------------------------------------------ header --
  function drawHeader() {
    const header = state.pic.header;
    const cards = $("cards");
    cards.textContent = "";
    STATES.forEach((name, i) => {
      const card = h("div", "stat");
      card.style.borderTopColor = COLOR[name];
      card.dataset.state = name;
      card.appendChild(h("div", "name", name === "TransferringOutput" ? "Transferring" : name));
      card.appendChild(h("div", "num", String(header.counts[name] || 0)));
      card.appendChild(sparkline(i, COLOR[name]));
      cards.appendChild(card);
    });
    const tp = h("div", "stat");
    tp.style.borderTopColor = "#1f2a37";
    tp.appendChild(h("div", "name", "Throughput"));
    tp.appendChild(h("div", "num", header.throughput.last_minute + "/min"));
    tp.appendChild(h("div", "name", "overall " + header.throughput.per_minute + "/min · " + header.total + " jobs"));
    cards.appendChild(tp);
    $("where").textContent = "journal position " + state.cut + " of " + state.head +
      (header.time ? " · " + new Date(header.time * 1000).toLocaleString() : "");
    const mode = $("mode");
    mode.className = "badge " + state.mode;
    mode.textContent = state.mode === "live" ? "● LIVE" : state.mode === "static" ? "STATIC REPORT" : "REPLAY @" + state.cut;
  }
  function sparkline(column, color) {
    const svg = el("svg", {viewBox: "0 0 100 26", preserveAspectRatio: "none"});
    const pts = state.series;
    if (pts.length < 2) return svg;
    const max = Math.max(1, ...pts.map((p) => p[2 + column]));
    const [t0, t1] = state.domain || [pts[0][1], pts[pts.length - 1][1]];
    const w = Math.max(t1 - t0, 1e-6);
    let d = "";
    pts.forEach((p, i) => {
      const x = ((p[1] - t0) / w) * 100, y = 24 - (p[2 + column] / max) * 22;
      d += (i ? "L" : "M") + x.toFixed(2) + "," + y.toFixed(2);
    });
    el("path", {d: d, fill: "none", stroke: color, "stroke-width": 1.5, "vector-effect": "non-scaling-stroke"}, svg);
    return svg;
  }

  // ---------------------------------------------------------------- timeline --
  function lanes() {
    const rows = new Map();
    const add = (slot, item) => {
      const key = slot || "(held while idle)";
      if (!rows.has(key)) rows.set(key, []);
      rows.get(key).push(item);
    };
    for (const job of state.jobs.values()) {
      job.runs.forEach((run, i) => add(run.slot || "(starting)", {job: job, run: run, attempt: i + 1}));
      for (const hold of job.holds) add(hold.slot, {job: job, hold: hold});
    }
    const names = Array.from(rows.keys()).sort((a, b) => {
      const ha = a.split("@").slice(1).join("@"), hb = b.split("@").slice(1).join("@");
      return ha === hb ? a.localeCompare(b, undefined, {numeric: true}) : ha.localeCompare(hb);
    });
    return names.map((n) => [n, rows.get(n)]);
  }
  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  }
  // The timeline is one SVG written as text (10,000 bars draw in one parse, not 40,000
  // DOM calls); the bars answer the mouse through one listener each on the box.
  function drawTimeline() {
    const box = $("timeline");
    const rows = lanes();
    state.items = [];
    if (!rows.length || !state.domain) {
      box.innerHTML = '<p class="empty">' + (state.jobs.size ? "no job has started yet" : "no jobs at this position") + "</p>";
      return;
    }
    const labelW = 190, rowH = 22, top = 22;
    const width = Math.max((state.widths.timeline || 900) - 18, 600);
    const height = top + rows.length * rowH + 6;
    const [t0, t1] = state.domain;
    const end = state.pic.header.time || t1;
    const scale = (width - labelW - 10) / Math.max(t1 - t0, 1e-6);
    const x = (t) => labelW + (t - t0) * scale;
    const many = state.jobs.size > 2000;
    if (many) return drawTimelineCanvas(box, rows, width, height, x, end, top, rowH, t0, t1);
    const out = [`<svg width="${width}" height="${height}" id="timeline-svg"><defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbd9b9"/><rect width="3" height="6" fill="#f2994a"/></pattern></defs>`];
    rows.forEach(([name, items], i) => {
      const y = top + i * rowH;
      if (i % 2 === 0) out.push(`<rect x="0" y="${y}" width="${width}" height="${rowH}" class="row-band"/>`);
      const dask = name.indexOf("@dask-") >= 0;
      out.push(`<text x="6" y="${y + 15}" class="row-label${dask ? " dask" : ""}">${dask ? "◆ " : ""}${esc(name)}</text>`);
      if (!many) for (const item of items) if (item.run && item.run.wait !== null && item.run.wait !== undefined) {
        const x0 = x(item.run.wait), x1 = x(item.run.start);   // queue waits first, thin, under the runs
        out.push(`<rect x="${x0.toFixed(1)}" y="${y + 17}" width="${Math.max(x1 - x0, 1).toFixed(1)}" height="3" class="p-wait"/>`);
      }
      for (const item of items) out.push(itemSvg(item, x, y, end, many));
    });
    out.push(axisSvg(x, t0, t1, top, height));
    if (state.mode === "replay" || state.mode === "static") {
      const cx = x(end).toFixed(1);
      out.push(`<line x1="${cx}" x2="${cx}" y1="${top - 4}" y2="${height}" stroke="#f2994a" stroke-width="1.5" stroke-dasharray="4 3"/>`);
    }
    out.push("</svg>");
    box.innerHTML = out.join("");
  }
  // Past 2,000 jobs the bars go on a canvas (one paint, no element per bar); the mouse
  // finds its bar by row and time.
  const PAINT = {wait: "#b8c2cc", in: "#56ccf2", exec: "#2f80ed", ok: "#27ae60", bad: "#eb5757", out: "#9b51e0",
                 suspended: "#e2b93b", held: "#f2994a"};
  function drawTimelineCanvas(box, rows, width, height, x, end, top, rowH, t0, t1) {
    const ratio = window.devicePixelRatio || 1;
    box.innerHTML = `<canvas id="timeline-canvas" width="${width * ratio}" height="${height * ratio}" style="width:${width}px;height:${height}px"></canvas>`;
    const ctx = box.firstChild.getContext("2d");
    ctx.scale(ratio, ratio);
    ctx.font = "11px system-ui, sans-serif";
    state.canvasRows = {top: top, rowH: rowH, x: x, end: end, rows: rows};
    rows.forEach(([name, items], i) => {
      const y = top + i * rowH;
      if (i % 2 === 0) { ctx.fillStyle = "#f7f9fb"; ctx.fillRect(0, y, width, rowH); }
      ctx.fillStyle = name.indexOf("@dask-") >= 0 ? "#8a4fc8" : "#1f2933";
      ctx.fillText((name.indexOf("@dask-") >= 0 ? "◆ " : "") + name, 6, y + 15);
      for (const item of items) {
        const rect = (color, a, b) => {
          const x0 = x(a), x1 = x(b === null || b === undefined ? end : b);
          ctx.fillStyle = color;
          ctx.fillRect(x0, y + 3, Math.max(x1 - x0, 1), 16);
        };
        if (item.hold) { rect(PAINT.held, item.hold.t0, item.hold.t1); continue; }
        const run = item.run;
        const done = run.outcome === "exit 0" ? "ok" : run.outcome && /^(exit|signal)/.test(run.outcome) ? "bad" : "exec";
        for (const [kind, a, b] of run.parts) rect(kind === "exec" ? PAINT[done] : PAINT[kind] || PAINT.exec, a, b);
      }
    });
    ctx.strokeStyle = "#e1e6ec";
    ctx.fillStyle = "#6b7785";
    ctx.font = "10px system-ui, sans-serif";
    for (let i = 0; i <= 6; i++) {
      const t = t0 + ((t1 - t0) * i) / 6, cx = x(t);
      ctx.beginPath(); ctx.moveTo(cx, top - 4); ctx.lineTo(cx, height); ctx.stroke();
      ctx.textAlign = i === 0 ? "left" : i === 6 ? "right" : "center";
      ctx.fillText(i === 0 ? clock(t) : "+" + span(t - t0), cx, 12);
    }
  }
  function canvasItem(e) {
    const c = state.canvasRows, canvas = $("timeline-canvas");
    if (!c || !canvas) return null;
    const box = canvas.getBoundingClientRect(), px = e.clientX - box.left, py = e.clientY - box.top;
    const row = c.rows[Math.floor((py - c.top) / c.rowH)];
    if (!row || py < c.top) return null;
    for (const item of row[1]) {
      const [a, b] = item.hold ? [item.hold.t0, item.hold.t1] : [item.run.start, item.run.end];
      if (px >= c.x(a) - 1 && px <= c.x(b === null ? c.end : b) + 1) return item;
    }
    return null;
  }
  function axisSvg(x, t0, t1, top, height) {
    const n = 6, out = [];
    for (let i = 0; i <= n; i++) {
      const t = t0 + ((t1 - t0) * i) / n, cx = x(t).toFixed(1);
      const anchor = i === 0 ? "start" : i === n ? "end" : "middle";
      out.push(`<line x1="${cx}" x2="${cx}" y1="${top - 4}" y2="${height}" class="gridline"/>` +
               `<text x="${cx}" y="12" class="axis" text-anchor="${anchor}">${i === 0 ? clock(t) : "+" + span(t - t0)}</text>`);
    }
    return out.join("");
  }
  function itemSvg(item, x, y, end, many) {
    const k = state.items.push(item) - 1;
    const out = [`<g class="bar" data-job="${esc(item.job.id)}" data-i="${k}">`];
    const bar = (cls, a, b) => {
      const x0 = x(a), x1 = x(b === null || b === undefined ? end : b);
      out.push(`<rect x="${x0.toFixed(1)}" y="${y + 3}" width="${Math.max(x1 - x0, 1.5).toFixed(1)}" height="16" class="${cls}" rx="2"/>`);
    };
    if (item.hold) {
      bar("p-held", item.hold.t0, item.hold.t1);
    } else {
      const run = item.run;
      const ok = run.outcome === "exit 0" ? " ok" : run.outcome && (run.outcome.startsWith("exit") || run.outcome.startsWith("signal")) ? " bad" : "";
      for (const [kind, a, b] of run.parts) bar("p-" + kind + (kind === "exec" ? ok : ""), a, b);
      if (run.outcome === "evicted" || run.outcome === "exception") {
        const ex = x(run.end).toFixed(1);
        out.push(`<line x1="${ex}" x2="${ex}" y1="${y + 1}" y2="${y + 21}" class="mark-evicted"/>`);
      }
      const x0 = x(run.start), x1 = x(run.end === null ? end : run.end);
      const label = (item.job.node || item.job.id) + (item.attempt > 1 ? " #" + item.attempt : "");
      if (!many && x1 - x0 > label.length * 6 + 4) out.push(`<text x="${(x0 + 3).toFixed(1)}" y="${y + 15}" class="bar-label">${esc(label)}</text>`);
    }
    out.push("</g>");
    return out.join("");
  }
  function barItem(e) {
    if (e.target.id === "timeline-canvas") return canvasItem(e);
    const g = e.target.closest && e.target.closest(".bar");
    return g ? state.items[Number(g.dataset.i)] : null;
  }
  function listenTimeline() {
    const box = $("timeline");
    let current = null;
    box.addEventListener("mouseover", (e) => {
      const item = barItem(e);
      if (item && item !== current) { current = item; showTip(e, item); }
      if (!item && current) { current = null; hideTip(); }
    });
    box.addEventListener("mousemove", (e) => {
      if (e.target.id === "timeline-canvas") {
        const item = canvasItem(e);
        if (item !== current) { current = item; if (item) showTip(e, item); else hideTip(); }
      }
      if (current) moveTip(e);
    });
    box.addEventListener("mouseleave", () => { current = null; hideTip(); });
    box.addEventListener("click", (e) => { const item = barItem(e); if (item) openDrawer(item.job.id); });
  }

  // ------------------------------------------------------------------ tooltip --
  function tipText(item) {
    const j = item.job;
    const who = j.id + (j.node ? " · node " + j.node : "") + (j.cmd ? " · " + j.cmd : "");
    if (item.hold) return [who, "held " + clock(item.hold.t0) + " → " + (item.hold.t1 ? clock(item.hold.t1) : "now"),
                           "code " + item.hold.code + ": " + (item.hold.reason || "")].join("\n");
    const r = item.run;
    const parts = r.parts.map(([k, a, b]) => PART[k] + " " + span(((b === null ? state.pic.header.time : b) - a) || 0));
    return [who, "attempt " + item.attempt + " on " + (r.slot || "?") + " · " + (r.outcome || "running"),
            (r.wait !== null ? "waited " + span(r.start - r.wait) + " · " : "") + parts.join(" · ")].join("\n");
  }
  function itemWindow(item) {
    if (item.hold) return [item.hold.t0, item.hold.t1 === null ? Infinity : item.hold.t1];
    const r = item.run;
    return [r.wait !== null ? r.wait : r.start, r.end === null ? Infinity : r.end];
  }
  async function showTip(e, item) {
    const tip = $("tip");
    tip.hidden = false;
    tip.textContent = tipText(item);
    moveTip(e);
    const story = await storyOf(item.job.id).catch(() => null);
    if (!story || tip.hidden || tip.dataset.for !== undefined && tip.dataset.for !== item.job.id) return;
    const [a, b] = itemWindow(item);
    const texts = story.steps.filter((s) => s.text && !s.what.startsWith("action") && s.time >= a - 0.001 && s.time <= b + 0.001).map((s) => s.text);
    if (texts.length) {
      const pre = h("pre", "", texts.join(""));
      tip.appendChild(pre);
    }
  }
  function moveTip(e) {
    const tip = $("tip");
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 540) + "px";
    tip.style.top = Math.min(e.clientY + 14, window.innerHeight - 200) + "px";
  }
  function hideTip() { $("tip").hidden = true; }
  async function storyOf(id) {
    const key = id + "@" + state.cut;
    if (state.stories.has(key)) return state.stories.get(key);
    let story;
    if (STATIC) story = STATIC.stories[id] ? cutStory(STATIC.stories[id], state.cut) : null;
    else story = await getJSON("/api/job/" + id + "?at=" + state.cut);
    state.stories.set(key, story);
    return story;
  }
  function cutStory(story, at) {
    const steps = story.steps.filter((s) => s.position <= at);
    return Object.assign({}, story, {steps: steps});
  }

  // -------------------------------------------------------------- state area --
  function drawArea() {
    const box = $("area");
    box.textContent = "";
    const pts = state.series;
    if (!pts.length || !state.domain) { box.appendChild(h("p", "empty", "no jobs at this position")); return; }
    const width = Math.max((state.widths.area || 500) - 4, 320), height = 230, left = 34, bottom = 20;
    const svg = el("svg", {width: width, height: height, id: "area-svg"}, box);
    const [t0, t1] = state.domain;
    const total = Math.max(1, ...pts.map((p) => p.slice(2).reduce((a, b) => a + b, 0)));
    const x = (t) => left + ((t - t0) / Math.max(t1 - t0, 1e-6)) * (width - left - 8);
    const y = (v) => height - bottom - (v / total) * (height - bottom - 8);
    const end = state.pic.header.time || t1;
    const order = [3, 4, 2, 5, 6, 1, 0];   // completed and removed at the bottom, idle on top
    const base = pts.map(() => 0);
    for (const col of order) {
      const up = [], down = [];
      let any = false;
      pts.forEach((p, i) => {
        const nx = i + 1 < pts.length ? pts[i + 1][1] : end;
        const lo = base[i], hi = lo + p[2 + col];
        if (p[2 + col] > 0) any = true;
        up.push((i ? "L" : "M") + x(p[1]).toFixed(1) + "," + y(hi).toFixed(1) + "L" + x(nx).toFixed(1) + "," + y(hi).toFixed(1));
        down.push("L" + x(nx).toFixed(1) + "," + y(lo).toFixed(1) + "L" + x(p[1]).toFixed(1) + "," + y(lo).toFixed(1));
        base[i] = hi;
      });
      if (any) el("path", {d: up.join("") + down.reverse().join("") + "Z", fill: COLOR[STATES[col]], "fill-opacity": 0.85, "data-state": STATES[col]}, svg);
    }
    for (const v of [0, Math.round(total / 2), total]) {
      el("line", {x1: left, x2: width - 8, y1: y(v), y2: y(v), class: "gridline"}, svg);
      el("text", {x: left - 4, y: y(v) + 3, class: "axis", "text-anchor": "end"}, svg, String(v));
    }
    el("text", {x: left, y: height - 5, class: "axis"}, svg, clock(t0));
    el("text", {x: width - 8, y: height - 5, class: "axis", "text-anchor": "end"}, svg, "+" + span(t1 - t0));
  }

  // --------------------------------------------------------------------- DAG --
  function dagNodes(cluster) {
    const nodes = new Map();
    for (const j of state.jobs.values()) {
      if (String(j.dag) !== String(cluster) || !j.node) continue;
      const n = nodes.get(j.node) || {name: j.node, jobs: []};
      n.jobs.push(j);
      nodes.set(j.node, n);
    }
    for (const n of nodes.values()) n.jobs.sort((a, b) => a.c - b.c || a.p - b.p);
    return nodes;
  }
  function nodeState(n) {
    if (!n || !n.jobs.length) return "none";
    const last = n.jobs[n.jobs.length - 1], s = jobState(last);
    if (s === "Completed" && last.exit !== undefined && last.exit !== 0) return "failed";
    return s;
  }
  async function graphOf(cluster) {
    if (state.graphs[cluster]) return state.graphs[cluster];
    if (STATIC) return (state.graphs[cluster] = STATIC.dags[cluster] || {nodes: {}});
    try { state.graphs[cluster] = await getJSON("/api/dag/" + cluster); }
    catch (e) { state.graphs[cluster] = {nodes: {}, error: String(e)}; }
    return state.graphs[cluster];
  }
  function drawDags() {
    const box = $("dags");
    const clusters = Object.keys(state.dags).sort((a, b) => a - b);
    const sub = new Set();
    for (const c of clusters) { const j = state.jobs.get(c + ".0"); if (j && j.dag !== undefined) sub.add(c); }
    const tops = clusters.filter((c) => !sub.has(c));
    if (!tops.length) { box.textContent = ""; box.appendChild(h("p", "empty", "no DAG at this position")); return; }
    const open = new Set(Array.from(box.querySelectorAll("details[open]")).map((d) => d.dataset.cluster));
    const first = !box.querySelector("details");
    box.textContent = "";
    for (const c of tops) box.appendChild(dagBlock(c, open, first, 0));
  }
  function dagBlock(cluster, open, first, depth) {
    const details = h("details", "dag-block");
    details.dataset.cluster = cluster;
    if (open.has(cluster) || (first && depth === 0)) details.open = true;
    const graph = state.graphs[cluster];
    if (!graph) graphOf(cluster).then(() => scheduleDraw());
    const nodes = dagNodes(cluster);
    const names = graph && Object.keys(graph.nodes).length ? Object.keys(graph.nodes) : Array.from(nodes.keys()).sort();
    const done = names.filter((n) => nodeState(nodes.get(n)) === "Completed").length;
    const retries = Array.from(nodes.values()).reduce((a, n) => a + Math.max(0, n.jobs.length - 1), 0);
    const where = state.dags[cluster] || {};
    const summary = h("summary", "", (where.dag || "DAG") + " ");
    summary.appendChild(h("span", "muted", "DAGMan job " + cluster + " · " + done + "/" + names.length + " done" +
                                            (retries ? " · " + retries + " retr" + (retries > 1 ? "ies" : "y") : "") +
                                            (graph && graph.error ? " · " + graph.error : "")));
    details.appendChild(summary);
    details.appendChild(dagSvg(cluster, graph, nodes, names));
    for (const name of names) {
      const n = nodes.get(name);
      const job = n && n.jobs[n.jobs.length - 1];
      if (job && state.dags[String(job.c)]) details.appendChild(dagBlock(String(job.c), open, false, depth + 1));
    }
    return details;
  }
  function layers(names, graph) {
    const layer = {};
    const parents = (n) => (graph && graph.nodes[n] ? graph.nodes[n].parents : []).filter((p) => names.includes(p));
    const visit = (n, seen) => {
      if (layer[n] !== undefined) return layer[n];
      if (seen.has(n)) return 0;
      seen.add(n);
      const ps = parents(n);
      return (layer[n] = ps.length ? 1 + Math.max(...ps.map((p) => visit(p, seen))) : 0);
    };
    names.forEach((n) => visit(n, new Set()));
    return layer;
  }
  function dagSvg(cluster, graph, nodes, names) {
    const layer = layers(names, graph);
    const cols = {};
    for (const n of names) (cols[layer[n]] = cols[layer[n]] || []).push(n);
    const colW = 118, rowH = 40, boxW = 96, boxH = 28;
    const depth = Math.max(0, ...Object.keys(cols).map(Number)) + 1;
    const tall = Math.max(1, ...Object.values(cols).map((c) => c.length));
    const width = depth * colW + 10, height = tall * rowH + 10;
    const svg = el("svg", {width: width, height: height, class: "dag-svg", "data-cluster": cluster});
    const pos = {};
    for (const [l, list] of Object.entries(cols)) {
      const off = ((tall - list.length) * rowH) / 2;
      list.forEach((n, i) => (pos[n] = [5 + Number(l) * colW, 5 + off + i * rowH]));
    }
    if (graph) for (const n of names) for (const p of (graph.nodes[n] || {parents: []}).parents) {
      if (!pos[p]) continue;
      const [x0, y0] = [pos[p][0] + boxW, pos[p][1] + boxH / 2], [x1, y1] = [pos[n][0], pos[n][1] + boxH / 2];
      const mx = (x0 + x1) / 2;
      el("path", {d: `M${x0},${y0} C${mx},${y0} ${mx},${y1} ${x1},${y1}`, class: "edge"}, svg);
    }
    for (const name of names) {
      const n = nodes.get(name), st = nodeState(n);
      const g = el("g", {class: "node st-" + st.toLowerCase(), "data-node": name, "data-state": st,
                         transform: `translate(${pos[name][0]},${pos[name][1]})`}, svg);
      const fill = st === "failed" ? "#eb5757" : COLOR[st] || "#fff";
      el("rect", {width: boxW, height: boxH, fill: fill}, g);
      el("text", {x: 8, y: 18}, g, name.length > 12 ? name.slice(0, 11) + "…" : name);
      const info = graph && graph.nodes[name];
      const tags = [];
      if (n && n.jobs.length > 1) tags.push("↻" + (n.jobs.length - 1));
      if (info && info.scripts.includes("PRE")) tags.push("PRE");
      if (info && info.scripts.includes("POST")) tags.push("POST" + (n && n.jobs.some((j) => j.post !== undefined) ? "✓" : ""));
      if (tags.length) {
        el("rect", {x: boxW - 6 - tags.join(" ").length * 5.4, y: -7, width: tags.join(" ").length * 5.4 + 4, height: 12, rx: 3, fill: "#fff", stroke: "#9aa5b1"}, g);
        el("text", {x: boxW - 4 - tags.join(" ").length * 5.4, y: 2, class: "tag"}, g, tags.join(" "));
      }
      const title = el("title", {}, g, name + ": " + (st === "none" ? "not submitted yet" : st) +
                       (n ? " · job " + n.jobs.map((j) => j.id).join(", ") : ""));
      if (n) g.addEventListener("click", () => openDrawer(n.jobs[n.jobs.length - 1].id));
    }
    return svg;
  }

  // ------------------------------------------------------------------ drawer --
  async function openDrawer(id) {
    const drawer = $("drawer"), body = $("drawer-body");
    drawer.hidden = false;
    drawer.dataset.job = id;
    body.textContent = "loading " + id + " …";
    let story;
    try { story = await storyOf(id); } catch (e) { body.textContent = String(e); return; }
    body.textContent = "";
    if (!story) { body.appendChild(h("p", "empty", "job " + id + " is not in the journal at position " + state.cut)); return; }
    const job = state.jobs.get(id) || {};
    body.appendChild(h("h3", "", "Job " + id + (job.node ? " · node " + job.node : "")));
    body.appendChild(h("p", "", (jobState(job) || "") + (job.cmd ? " · " + job.cmd : "") + " · as of position " + state.cut +
                                (story.left ? " · left the queue" : "")));
    if (story.hold_reason !== undefined) {
      const box = h("div", "holdbox");
      box.appendChild(h("b", "", "Held · code " + story.hold_code));
      box.appendChild(h("div", "hold-reason", story.hold_reason || ""));
      body.appendChild(box);
    }
    const table = h("table", "steps");
    const head = h("tr");
    for (const t of ["pos", "time", "what", "ad changes"]) head.appendChild(h("th", "", t));
    table.appendChild(head);
    for (const s of story.steps) {
      const tr = h("tr");
      tr.appendChild(h("td", "", String(s.position)));
      tr.appendChild(h("td", "", clock(s.time)));
      tr.appendChild(h("td", "", s.what));
      const td = h("td", "chg");
      const names = Object.keys(s.changes);
      for (const name of names.slice(0, 12)) {
        const [a, b] = s.changes[name];
        const line = h("div");
        line.appendChild(document.createTextNode(name + " "));
        if (a !== null) line.appendChild(h("del", "", a));
        line.appendChild(document.createTextNode(" → "));
        line.appendChild(h("ins", "", b === null ? "(gone)" : b));
        td.appendChild(line);
      }
      if (names.length > 12) td.appendChild(h("div", "", "… " + (names.length - 12) + " more"));
      tr.appendChild(td);
      table.appendChild(tr);
    }
    body.appendChild(table);
    body.appendChild(h("h4", "", "User log"));
    body.appendChild(h("pre", "userlog", story.userlog || "(no events yet)"));
    const ad = h("details");
    ad.appendChild(h("summary", "", "Job ad (" + Object.keys(story.ad).length + " attributes)"));
    ad.appendChild(h("pre", "", Object.keys(story.ad).sort().map((k) => k + " = " + story.ad[k]).join("\n")));
    body.appendChild(ad);
  }

  // ------------------------------------------------------------------ replay --
  function drawReplay() {
    const slider = $("slider");
    slider.max = String(state.head);
    if (document.activeElement !== slider || state.mode === "live") slider.value = String(state.cut);
    const header = state.pic.header;
    const at = header.time && state.domain ? " · " + clock(header.time) + " (+" + span(header.time - state.domain[0]) + ")" : "";
    $("cut").textContent = "position " + state.cut + " / " + state.head + at;
    const moment = $("moment");
    if (document.activeElement !== moment && header.time) moment.value = localInput(header.time);
    const q = state.mode === "live" ? "" : state.asOf !== null ? "?as_of=" + state.asOf : "?at=" + state.cut;
    $("permalink").href = (STATIC ? "#" : "/") + q;
    if (!STATIC) {
      $("report").href = "/report.html" + q;
      $("trace").href = "/trace.json" + q;
    }
  }
  // A moment typed in (local time, to the second): the picture of what had happened by
  // its last instant; in the report, the last frame whose time is not after it.
  async function seekMoment(text) {
    const t = new Date(text).getTime() / 1000;
    if (!isFinite(t)) return;
    const asOf = Math.floor(t) + 0.999;
    if (STATIC) {
      let best = STATIC.frames[0] || STATIC.picture;
      for (const f of STATIC.frames) if (f.header.time !== null && f.header.time <= asOf) best = f;
      seek(best.header.position);
      return;
    }
    try {
      const pic = await getJSON("/api/picture?as_of=" + asOf);
      setMode("replay");
      take(pic);
      state.asOf = asOf;
      history.replaceState(null, "", "/?as_of=" + asOf);
      draw();
    } catch (e) { $("cut").textContent = String(e); }
  }
  let pending = null, inflight = false;
  function seek(position) {
    state.asOf = null;
    pending = position;
    if (inflight) return;
    inflight = true;
    setMode(position >= state.head && !STATIC ? "live" : (STATIC ? "static" : "replay"));
    (async () => {
      while (pending !== null) {
        const at = pending;
        pending = null;
        if (STATIC) {
          take(frameAt(at));
        } else if (at >= state.head) {
          setMode("live");
          take(await getJSON("/api/picture"));
          history.replaceState(null, "", "/");
        } else {
          setMode("replay");
          take(await getJSON("/api/picture?at=" + at));
          history.replaceState(null, "", "/?at=" + at);
        }
        draw();
      }
      inflight = false;
    })().catch((e) => { inflight = false; $("cut").textContent = String(e); });
  }
  function frameAt(at) {
    let best = STATIC.frames[0] || STATIC.picture;
    for (const f of STATIC.frames) if (f.header.position <= at) best = f;
    return Object.assign({}, best, {head: STATIC.picture.head});
  }
  function setMode(mode) {
    state.mode = mode;
    document.body.dataset.mode = mode;
  }

  // -------------------------------------------------------------------- live --
  function follow() {
    if (state.source) state.source.close();
    const src = new EventSource("/api/events?since=" + state.cut);
    state.source = src;
    src.addEventListener("delta", (e) => {
      const delta = JSON.parse(e.data);
      state.lastId = e.lastEventId;
      state.head = Math.max(state.head, delta.head);
      document.body.dataset.head = String(state.head);
      if (state.mode === "live") merge(delta);
      scheduleDraw();
    });
    src.addEventListener("reset", () => { src.close(); boot(); });
  }

  // -------------------------------------------------------------------- draw --
  let scheduled = false;
  function scheduleDraw() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; draw(); });
  }
  function draw() {
    state.widths = {timeline: $("timeline").clientWidth, area: $("area").clientWidth};   // before any change: one layout
    drawHeader();
    drawReplay();
    drawTimeline();
    drawArea();
    drawDags();
    const drawer = $("drawer");
    document.body.dataset.position = String(state.cut);
    document.body.dataset.head = String(state.head);
    document.body.dataset.jobs = String(state.jobs.size);
    if (document.body.dataset.ready !== "1") document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
    state.drawn += 1;
    document.body.dataset.drawn = String(state.drawn);
    if (!drawer.hidden && drawer.dataset.job && drawer.dataset.cut !== String(state.cut)) {
      drawer.dataset.cut = String(state.cut);
      openDrawer(drawer.dataset.job);
    }
  }
  function legend() {
    const box = $("legend");
    const items = [["queue wait", "#b8c2cc"], ["input transfer", "#56ccf2"], ["running", "#2f80ed"], ["exited 0", "#27ae60"],
                   ["failed", "#eb5757"], ["output transfer", "#9b51e0"], ["held", "#f2994a"], ["suspended", "#e2b93b"]];
    for (const [name, color] of items) {
      const s = h("span");
      const i = h("i");
      i.style.background = color;
      s.appendChild(i);
      s.appendChild(document.createTextNode(name));
      box.appendChild(s);
    }
    box.appendChild(h("span", "", "│ evicted"));
    box.appendChild(h("span", "", "◆ Dask worker"));
  }
  async function audit() {
    const badge = $("audit");
    const show = (v) => {
      badge.textContent = "audit " + v.text + " @" + v.position;
      badge.className = "badge audit " + (v.ok === true ? "ok" : v.ok === false ? "failed" : "");
      badge.title = (v.findings || []).join("\n");
    };
    if (STATIC) {
      if (STATIC.audit) show(STATIC.audit); else badge.textContent = "audit: not run";
      return;
    }
    try { show(await getJSON("/api/audit")); } catch (e) { badge.textContent = "audit: " + e; }
  }

  async function boot() {
    if (STATIC) {
      setMode("static");
      take(STATIC.picture);
      state.head = STATIC.picture.head;
      draw();
      audit();
      return;
    }
    const params = new URLSearchParams(location.search);
    const at = params.get("at"), asOf = params.get("as_of");
    const live = await getJSON("/api/picture");
    take(live);
    state.head = live.head;
    if (at !== null && /^\d+$/.test(at) && Number(at) < live.head) {
      setMode("replay");
      take(await getJSON("/api/picture?at=" + at));
    } else if (asOf !== null && isFinite(Number(asOf))) {
      setMode("replay");
      take(await getJSON("/api/picture?as_of=" + Number(asOf)));
      state.asOf = Number(asOf);
    } else {
      setMode("live");
    }
    draw();
    follow();
    audit();
    setInterval(() => { if (state.mode === "live") audit(); }, 10000);
  }

  // What the page shows, for scripts and tests (read-only copies).
  window.jobledgerView = {
    jobs: () => Array.from(state.jobs.values()).map((j) => ({id: j.id, st: j.st, exit: j.exit, node: j.node, dag: j.dag})),
    position: () => state.cut, head: () => state.head, mode: () => state.mode,
    timeDraw: () => { state.widths = {timeline: $("timeline").clientWidth, area: $("area").clientWidth}; const out = {}; for (const [n, f] of [["header", drawHeader], ["timeline", drawTimeline], ["area", drawArea], ["dags", drawDags]]) { const t = performance.now(); f(); out[n] = performance.now() - t; } return out; },
  };
  $("slider").addEventListener("input", (e) => seek(Number(e.target.value)));
  $("moment").addEventListener("change", (e) => seekMoment(e.target.value));
  $("live").addEventListener("click", () => seek(STATIC ? STATIC.picture.head : Infinity));
  $("close").addEventListener("click", () => { $("drawer").hidden = true; delete $("drawer").dataset.job; });
  window.addEventListener("resize", scheduleDraw);
  legend();
  listenTimeline();
  boot().catch((e) => { document.body.dataset.error = String(e); $("where").textContent = "error: " + e; });
})();
