// The twin's live dashboard: one EventSource on /ui/events (a whole frame first, then only
// deltas when the state changes, and a small status at least every 15 s), a canvas for the
// continuum, small tables for the queue and the decisions, history charts from
// /api/v1/history; ops.js draws the headline figures, the unschedulable pods and staleness.
// Read-only: every request it makes is a GET.
"use strict";
(function () {
  const API = "/api/v1";
  const GUTTER = 200, NARROW = 640, BAND_HEAD = 22, GAP = 2, PAD = 8;
  const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const CORDON = "#ff8c00";
  const $ = (id) => document.getElementById(id);
  const state = { frame: null, selected: -1, layout: null, chartTimer: 0,
    session: "", liveSession: null, source: null };  // session: "" = the live one
  // Read by the browser tests: frames received and when the first one was drawn.
  const ui = (window.twinUi = { frames: 0, deltas: 0, fulls: 0, bytes: 0, firstRenderMs: null, lastRenderMs: 0 });
  window.twinUiState = () => state;
  ui.cellAt = (node) => state.layout && cellAt(state.layout, node);  // CSS pixels of a node's cell

  function colour(v) {
    const x = Math.max(0, Math.min(1, v)) * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(x)), t = x - i;
    const a = STOPS[i], b = STOPS[i + 1];
    return `rgb(${a.map((c, k) => Math.round(c + (b[k] - c) * t)).join(",")})`;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // -- layout: one band per nodepool, cells in rows; no tier gutter on a narrow screen ------
  function layout(frame, width) {
    const n = frame.nodes.id.length, gutter = width < NARROW ? PAD : GUTTER;
    const usable = Math.max(100, width - gutter - PAD);
    let cell = 18;
    while (cell > 6 && Math.ceil(n / Math.floor(usable / cell)) * cell > 900) cell -= 2;
    const perRow = Math.max(1, Math.floor(usable / cell));
    const bands = [];
    let y = PAD, first = 0;
    for (const pool of frame.pools) {
      const rows = Math.max(1, Math.ceil(pool.nodes / perRow));
      bands.push({ id: pool.id, first, count: pool.nodes, y, h: BAND_HEAD + rows * cell });
      y += BAND_HEAD + rows * cell + PAD * 2;
      first += pool.nodes;
    }
    return { cell, perRow, bands, height: y, width, gutter };
  }
  function cellAt(lay, node) {
    const band = lay.bands.find((b) => node >= b.first && node < b.first + b.count);
    if (!band) return null;
    const k = node - band.first;
    return { x: lay.gutter + (k % lay.perRow) * lay.cell, y: band.y + BAND_HEAD + Math.floor(k / lay.perRow) * lay.cell };
  }

  // -- drawing the continuum ----------------------------------------------------------------
  function draw() {
    const frame = state.frame, canvas = $("continuum");
    if (!frame) return;
    const width = canvas.clientWidth || 900, dpr = window.devicePixelRatio || 1;
    if (!state.layout || state.layout.width !== width || state.layout.nodes !== frame.nodes.id.length
        || state.layout.pools !== frame.pools.length) {
      state.layout = layout(frame, width);
      state.layout.nodes = frame.nodes.id.length;
      state.layout.pools = frame.pools.length;
      canvas.style.height = state.layout.height + "px";
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(state.layout.height * dpr);
    }
    const lay = state.layout, ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, lay.height);
    drawTiers(ctx, frame, lay);
    const nd = frame.nodes, c = lay.cell, s = (c - GAP) / 3;
    for (let i = 0; i < nd.id.length; i++) {
      const p = cellAt(lay, i);
      if (!p) continue;
      if (!nd.up[i]) {
        ctx.fillStyle = "#2b2b2b"; ctx.fillRect(p.x, p.y, c - GAP, c - GAP);
        ctx.strokeStyle = "#ff4d4d"; ctx.lineWidth = 1.5; ctx.beginPath();
        ctx.moveTo(p.x + 1, p.y + 1); ctx.lineTo(p.x + c - GAP - 1, p.y + c - GAP - 1);
        ctx.moveTo(p.x + c - GAP - 1, p.y + 1); ctx.lineTo(p.x + 1, p.y + c - GAP - 1); ctx.stroke();
        continue;
      }
      ctx.fillStyle = colour(nd.cpu[i]); ctx.fillRect(p.x, p.y, s, c - GAP);
      ctx.fillStyle = colour(nd.mem[i]); ctx.fillRect(p.x + s, p.y, s, c - GAP);
      ctx.fillStyle = nd.gpus[i].length ? colour(nd.gpu[i]) : "#c8ccd2";
      ctx.fillRect(p.x + 2 * s, p.y, s, c - GAP);
      if (nd.cordoned[i]) {  // cordoned: still running its pods, so its colours stay; framed
        ctx.strokeStyle = CORDON; ctx.lineWidth = 2; ctx.setLineDash([3, 2]);
        ctx.strokeRect(p.x + 1, p.y + 1, c - GAP - 2, c - GAP - 2); ctx.setLineDash([]);
      }
    }
    if (state.selected >= 0 && state.selected < nd.id.length) {
      const p = cellAt(lay, state.selected);
      ctx.strokeStyle = "#d9480f"; ctx.lineWidth = 3;
      ctx.strokeRect(p.x - 2, p.y - 2, c - GAP + 4, c - GAP + 4);
    }
  }
  function drawTiers(ctx, frame, lay) {
    const centre = {};
    ctx.font = "13px system-ui, sans-serif"; ctx.textBaseline = "middle";
    for (const band of lay.bands) {
      centre[band.id] = band.y + band.h / 2;
      ctx.fillStyle = "#e3e7ec"; ctx.fillRect(lay.gutter - 4, band.y, lay.width - lay.gutter + 4, band.h);
      ctx.fillStyle = "#1b1b1b";
      const down = countOf(frame.nodes.up, band.first, band.count, 0);
      const cordoned = countOf(frame.nodes.cordoned, band.first, band.count, 1);
      ctx.fillText(`${band.id}: ${band.count} nodes` + (down ? `, ${down} down` : "") +
        (cordoned ? `, ${cordoned} cordoned` : ""), lay.gutter, band.y + BAND_HEAD / 2);
      if (lay.gutter < GUTTER) continue;  // narrow: the links are listed below the map
      ctx.fillStyle = "#0b5394"; ctx.fillRect(130, centre[band.id] - 10, 64, 20);
      ctx.fillStyle = "#ffffff"; ctx.fillText(band.id.slice(0, 8), 134, centre[band.id]);
    }
    if (lay.gutter < GUTTER) return;
    const seen = new Set();
    const links = frame.links.filter(([a, b]) => {
      const key = [a, b].sort().join("\u0000");
      if (a === b || !(a in centre) || !(b in centre) || seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    links.forEach(([a, b, latency], k) => {
      const x = 112 - (k % 5) * 26, y1 = centre[a], y2 = centre[b], label = `${latency} ms`;
      ctx.strokeStyle = "#4a4a4a"; ctx.lineWidth = 1.5; ctx.beginPath();
      ctx.moveTo(130, y1); ctx.lineTo(x, y1); ctx.lineTo(x, y2); ctx.lineTo(130, y2); ctx.stroke();
      const w = ctx.measureText(label).width + 4, ym = (y1 + y2) / 2 + (k % 2 ? 8 : -8);
      ctx.fillStyle = "#ffffff"; ctx.fillRect(x - w / 2, ym - 8, w, 16);
      ctx.fillStyle = "#1b1b1b"; ctx.fillText(label, x - w / 2 + 2, ym);
    });
  }
  function countOf(column, first, count, value) {
    let n = 0;
    for (let i = first; i < first + count; i++) n += column[i] === value ? 1 : 0;
    return n;
  }

  // -- the rest of the page ------------------------------------------------------------------
  function render(frame) {
    const nd = frame.nodes, down = nd.up.length - nd.up.reduce((a, b) => a + b, 0);
    const cordoned = countOf(nd.cordoned, 0, nd.id.length, 1);
    $("node-count").textContent = nd.id.length;
    $("down-count").textContent = down;
    $("cordoned-count").textContent = cordoned;
    $("pod-count").textContent = frame.pods;
    for (const [phase, count] of Object.entries(frame.phases)) {
      const el = $("phase-" + phase);
      if (el) el.textContent = count;
    }
    $("version").textContent = frame.version;
    $("twin-time").textContent = (+frame.time).toFixed(1);
    $("continuum").setAttribute("aria-label",
      `Continuum map: ${nd.id.length} nodes in ${frame.pools.length} nodepools, ${down} down, ${cordoned} cordoned`);
    renderQueue(frame.queue, frame.time);
    if (window.twinOps) window.twinOps.render(frame);
    renderDecisions(frame.decisions, frame.session);
    if (state.nodeIds !== nd.id.length) {
      state.nodeIds = nd.id.length;
      $("node-ids").innerHTML = nd.id.map((id) => `<option value="${esc(id)}">`).join("");
    }
    draw();
    if (state.selected >= 0) renderNode(false);
  }
  function renderQueue(queue, now) {
    $("queue-shown").textContent = `(${queue.pods.length} of ${queue.total})`;
    $("queue").tBodies[0].innerHTML = queue.pods.map((p) =>
      `<tr data-pod="${esc(p.id)}"><td>${esc(p.id)}</td><td>${esc(p.job)}</td><td>${p.priority}</td>` +
      `<td>${p.cpu}</td><td>${p.mem}</td><td>${p.gpu ? `${p.gpu} × ${p.gpu_milli}m` : "0"}</td>` +
      `<td>${+Math.max(0, now - p.arrival_s).toFixed(3)}</td><td${p.reason === "Schedulable" ? "" : ' class="reason"'}>${esc(p.reason)}</td></tr>`).join("");
  }
  // Rendered again only when they change (a frame comes every second), so focus and the
  // selection stay; explain.js opens the explanation of a row's decision.
  function renderDecisions(decisions, session) {
    const sid = session ? session.id : "", key = sid + ":" + decisions.map((d) => d.seq).join(",");
    const body = $("decisions").tBodies[0];
    if (body.dataset.key === key) return;
    const focused = body.contains(document.activeElement) && document.activeElement.dataset.seq;
    body.dataset.key = key;
    body.innerHTML = decisions.map((d) =>
      `<tr data-pod="${esc(d.pod)}" data-seq="${d.seq}" data-session="${sid}"><td>${(+d.time).toFixed(1)}</td><td>${esc(d.pod)}</td>` +
      `<td>${esc(d.node)}</td><td>${d.gpus.join(", ")}</td><td>${d.scheduler == null ? "-" : esc(d.scheduler)}</td>` +
      `<td${d.fallback ? ' class="fallback"' : ""}>${d.fallback ? "yes" : "no"}</td>` +
      `<td>${d.model_version == null ? "-" : esc(d.model_version)}</td>` +
      `<td><button type="button" data-seq="${d.seq}" aria-label="Why did pod ${esc(d.pod)} go to ${esc(d.node)}? (decision ${d.seq})">Why?</button></td></tr>`).join("");
    if (window.twinExplain) window.twinExplain.mark();
    const again = focused && body.querySelector(`button[data-seq="${focused}"]`);
    if (again) again.focus();
  }
  // -- sessions: the live one by default, any older one on demand ----------------------------
  async function loadSessions() {
    try {
      const answer = await fetchJson(`${API}/sessions`), select = $("session");
      const options = [new Option(`live${answer.live == null ? "" : ` (session ${answer.live})`}`, "")];
      for (const s of answer.sessions.slice().reverse()) {
        options.push(new Option(`${s.id}: ${s.source}, ${s.timebase}${s.live ? ", live" : ""}`, String(s.id)));
      }
      select.replaceChildren(...options);
      select.value = state.session;
    } catch (err) { /* the picker keeps what it had */ }
  }
  const sessionQuery = () => (state.session ? `&session=${encodeURIComponent(state.session)}` : "");

  // -- one node: details, GPU bars, history ---------------------------------------------------
  function select(i, announce) {
    const nd = state.frame && state.frame.nodes;
    if (!nd || i < 0 || i >= nd.id.length) return;
    state.selected = i;
    draw();
    renderNode(true);
    if (announce) $("selection-status").textContent = $("node-summary").textContent;
  }
  function renderNode(reload) {
    const f = state.frame, nd = f.nodes, i = state.selected, pool = f.pools[nd.pool[i]].id;
    $("node-empty").hidden = true;
    $("node-details").hidden = false;
    const pct = (v) => Math.round(v * 100) + "%";
    $("node-summary").textContent = `${nd.id[i]} in ${pool}: ${nd.up[i] ? "Ready" : "NotReady (down)"}${nd.cordoned[i] ? ", cordoned" : ""}; ` +
      `CPU ${pct(nd.cpu[i])}, memory ${pct(nd.mem[i])}` + (nd.gpus[i].length ? `, GPU ${pct(nd.gpu[i])}` : ", no GPU");
    $("gpu-bars").innerHTML = nd.gpus[i].map((m, g) =>
      `<div class="gpu" role="meter" aria-valuemin="0" aria-valuemax="1000" aria-valuenow="${m}" ` +
      `aria-label="GPU ${g}: ${m} of 1000 milli-GPU">GPU ${g}: ${m}m<div class="bar"><span style="width:${m / 10}%"></span></div></div>`).join("");
    if (reload) loadHistory();
  }
  async function fetchJson(url) {
    const answer = await fetch(url);
    if (!answer.ok) throw new Error(`${url}: ${answer.status}`);
    return answer.json();
  }
  async function loadHistory() {
    clearTimeout(state.chartTimer);
    const f = state.frame, i = state.selected;
    if (!f || i < 0) return;
    const node = f.nodes.id[i], metric = $("metric").value || "cpu_util";
    const members = new Set(f.nodes.id.filter((_, k) => f.nodes.pool[k] === f.nodes.pool[i]));
    try {
      const one = await fetchJson(`${API}/history?metric=${encodeURIComponent(metric)}&node=${encodeURIComponent(node)}&limit=5000${sessionQuery()}`);
      const all = await fetchJson(`${API}/history?metric=${encodeURIComponent(metric)}&limit=50000${sessionQuery()}`);
      const series = one.series[0] || { times: [], values: [] };
      chart($("node-chart"), series.times, series.values, `${node}: ${metric}`, $("node-chart-caption"));
      const sums = new Map();
      for (const s of all.series) {
        if (!members.has(s.node)) continue;
        s.times.forEach((t, k) => { const a = sums.get(t) || [0, 0]; a[0] += s.values[k]; a[1] += 1; sums.set(t, a); });
      }
      const times = [...sums.keys()].sort((a, b) => a - b);
      chart($("pool-chart"), times, times.map((t) => sums.get(t)[0] / sums.get(t)[1]),
        `${f.pools[f.nodes.pool[i]].id} mean: ${metric}`, $("pool-chart-caption"));
    } catch (err) {
      $("node-chart-caption").textContent = `history unavailable: ${err.message}`;
    }
    state.chartTimer = setTimeout(loadHistory, 2000);
  }
  function chart(canvas, times, values, title, caption) {
    const ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, w, h);
    caption.textContent = times.length ? `${title}: ${times.length} samples, last ${(+values[values.length - 1]).toFixed(3)}` : `${title}: no samples`;
    canvas.setAttribute("aria-label", caption.textContent);
    if (times.length < 1) return;
    const t0 = times[0], t1 = Math.max(times[times.length - 1], t0 + 1e-9);
    const lo = Math.min(0, ...values), hi = Math.max(1e-9, ...values);
    ctx.strokeStyle = "#0b5394"; ctx.lineWidth = 1.5; ctx.beginPath();
    times.forEach((t, k) => {
      const x = 30 + ((t - t0) / (t1 - t0)) * (w - 40), y = h - 15 - ((values[k] - lo) / (hi - lo)) * (h - 30);
      k ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
    });
    ctx.stroke();
    ctx.fillStyle = "#1b1b1b"; ctx.font = "11px system-ui, sans-serif";
    ctx.fillText(hi.toFixed(2), 2, 12); ctx.fillText(lo.toFixed(2), 2, h - 15);
  }

  // -- input --------------------------------------------------------------------------------
  $("continuum").addEventListener("click", (ev) => {
    const lay = state.layout, rect = ev.currentTarget.getBoundingClientRect();
    if (!lay) return;
    const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
    for (const band of lay.bands) {
      const top = band.y + BAND_HEAD;
      if (y < top || y >= band.y + band.h || x < lay.gutter) continue;
      const k = Math.floor((y - top) / lay.cell) * lay.perRow + Math.floor((x - lay.gutter) / lay.cell);
      if (Math.floor((x - lay.gutter) / lay.cell) < lay.perRow && k < band.count) select(band.first + k, true);
    }
  });
  $("continuum").addEventListener("keydown", (ev) => {
    const lay = state.layout;
    if (!lay || !state.frame) return;
    const n = state.frame.nodes.id.length, i = Math.max(0, state.selected);
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: lay.perRow, ArrowUp: -lay.perRow, Home: -n, End: n }[ev.key];
    if (step !== undefined) {
      ev.preventDefault();
      select(state.selected < 0 ? 0 : Math.max(0, Math.min(n - 1, i + step)), true);
    } else if (ev.key === "Enter" && state.selected >= 0) {
      ev.preventDefault();
      $("metric").focus();
    }
  });
  $("find-node").addEventListener("change", (ev) => {
    const i = state.frame ? state.frame.nodes.id.indexOf(ev.target.value) : -1;
    if (i >= 0) select(i, true);
  });
  $("metric").addEventListener("change", loadHistory);
  for (const m of ["cpu_util", "memory_util", "gpu_util", "power_w"]) {
    $("metric").add(new Option(m, m));
  }
  window.addEventListener("resize", () => { state.layout = null; draw(); });
  $("session").addEventListener("change", (ev) => {
    state.session = ev.target.value;
    state.layout = null;
    connect();
    if (state.selected >= 0) loadHistory();
  });

  // -- the stream: a frame, then deltas; a status at least every 15 s ----------------------
  function shown(frame, size) {
    const live = frame.session && frame.session.live ? frame.session.id : state.liveSession;
    if (live !== state.liveSession) { state.liveSession = live; loadSessions(); }
    state.frame = frame;
    render(frame);
    ui.frames += 1;
    ui.bytes += size;
    ui.lastRenderMs = performance.now();
    if (ui.firstRenderMs === null) ui.firstRenderMs = ui.lastRenderMs;
  }
  // The same as apply() in twin/api/routes/ui_delta.py: changed entries encoded against
  // their old value ($d: a dict's changed keys, $x: its removed keys, $l: rows, each an index
  // into the old list or a new row), changed node columns as [indices, values].
  function decode(old, change) {
    if (change && typeof change === "object" && !Array.isArray(change)) {
      if ("$d" in change) {
        const out = Object.assign({}, old);
        for (const k of change.$x || []) delete out[k];
        for (const [k, v] of Object.entries(change.$d)) out[k] = decode(old ? old[k] : undefined, v);
        return out;
      }
      if ("$l" in change) return change.$l.map((r) => (typeof r === "number" ? old[r] : r));
    }
    return change;
  }
  function applyDelta(frame, delta) {
    const out = Object.assign({}, frame, { version: delta.version });
    for (const [k, change] of Object.entries(delta.set)) out[k] = decode(frame[k], change);
    if (delta.nodes && Object.keys(delta.nodes).length) {
      const nodes = Object.assign({}, out.nodes);
      for (const [column, [at, values]] of Object.entries(delta.nodes)) {
        const target = (nodes[column] || new Array(nodes.id.length)).slice();
        at.forEach((i, k) => { target[i] = values[k]; });
        nodes[column] = target;
      }
      out.nodes = nodes;
    }
    return out;
  }
  function connect() {
    if (state.source) state.source.close();
    const query = state.session ? `?session=${encodeURIComponent(state.session)}` : "";
    const source = (state.source = new EventSource("/ui/events" + query));
    source.addEventListener("frame", (ev) => { ui.fulls += 1; shown(JSON.parse(ev.data), ev.data.length); });
    source.addEventListener("delta", (ev) => {
      const delta = JSON.parse(ev.data);
      if (!state.frame || state.frame.version !== delta.base) { connect(); return; }  // out of step: start again
      ui.deltas += 1;
      shown(applyDelta(state.frame, delta), ev.data.length);
    });
    source.addEventListener("status", (ev) => {
      ui.bytes += ev.data.length;
      if (window.twinOps) window.twinOps.status(JSON.parse(ev.data), state.session !== "");
    });
    source.onerror = () => { if (window.twinOps) window.twinOps.lost(); };
  }
  window.twinUiReconnect = connect;
  loadSessions();
  connect();
})();
