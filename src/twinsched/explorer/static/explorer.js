// The run explorer: filters and the run table from /api/runs, charts and tables from
// /api/compare. Read-only: every request is a GET.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const COLOURS = ["#0b5394", "#c0392b", "#1e7b34", "#8e44ad", "#b35900", "#006d77", "#5c5c5c",
                   "#a61e4d", "#2f4b7c", "#665191", "#7a5c00", "#00539c"];
  const NAMES = { gpu_alloc_ratio_pct: "GPU allocated (%)", pending: "Pending pods (queue)",
                  running: "Running pods", power_w: "Power (W)" };
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const fmt = (v) => (v === null || v === undefined ? "-" : typeof v === "number" ? (Number.isInteger(v) ? v : v.toFixed(3)) : esc(v));
  const selected = new Set();
  // Read by the browser tests.
  const ui = (window.explorerUi = { loads: 0, compares: 0, sweeps: 0, decisions: 0, explains: 0 });

  async function fetchJson(url) {
    const answer = await fetch(url);
    if (!answer.ok) throw new Error(`${answer.status}: ${(await answer.json()).detail}`);
    return answer.json();
  }

  async function loadRuns() {
    const params = new URLSearchParams();
    for (const [key, value] of new FormData($("filters"))) if (value) params.set(key, value);
    try {
      const rows = await fetchJson(`/api/runs?${params}`);
      $("run-count").textContent = `(${rows.length})`;
      $("runs").tBodies[0].innerHTML = rows.map((r) =>
        `<tr data-run="${r.id}"><td><input type="checkbox" id="pick-${r.id}" value="${r.id}"` +
        `${selected.has(r.id) ? " checked" : ""} aria-label="Compare run ${r.id}"></td>` +
        `<td>${r.id}</td><td>${esc(r.created)}</td><td>${esc(r.trace)}</td><td>${esc(r.scheduler)}</td>` +
        `<td>${fmt(r.seed)}</td><td>${esc(r.mode)}</td><td>${esc(r.status)}</td><td>${fmt(r.alloc_pct)}</td>` +
        `<td>${fmt(r.energy_kwh)}</td><td>${fmt(r.wall_s)}</td>` +
        `<td><button type="button" data-decisions="${r.id}">Decisions</button></td></tr>`).join("");
      $("store-status").textContent = "store: connected";
    } catch (err) {
      $("store-status").textContent = `store: ${err.message}`;
    }
    ui.loads += 1;
  }

  async function compare() {
    const ids = [...selected];
    if (!ids.length) return;
    const data = await fetchJson(`/api/compare?${ids.map((i) => `ids=${i}`).join("&")}`);
    const charts = $("charts");
    charts.innerHTML = "";
    const colourOf = new Map(data.runs.map((r, k) => [r.row.id, COLOURS[k % COLOURS.length]]));
    const fill = data.runs.filter((r) => r.row.mode === "fillup" && r.curves);
    const replay = data.runs.filter((r) => r.row.mode === "replay" && r.curves);
    if (fill.length) chart(charts, "alloc", "GPU allocated (%) against GPU workload arrived (%)", fill, "gpu_alloc_ratio_pct", colourOf);
    for (const name of ["pending", "gpu_alloc_ratio_pct", "power_w"]) {
      if (replay.some((r) => r.curves[name])) chart(charts, `replay-${name}`, `${NAMES[name]} over time (s)`, replay, name, colourOf);
    }
    $("tables").innerHTML = Object.entries(data.tables).map(([mode, rows]) => table(`By scheduler (${mode})`, rows)).join("") +
      table("Per run", data.runs.map((r) => ({ run: r.label, ...(r.summary || {}) })));
    $("comparison").hidden = false;
    ui.compares += 1;
  }

  function table(title, rows) {
    if (!rows.length) return "";
    const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    return `<h3>${esc(title)}</h3><div class="scroll" tabindex="0" role="region" aria-label="${esc(title)}"><table><thead><tr>` +
      keys.map((k) => `<th scope="col">${esc(k)}</th>`).join("") + "</tr></thead><tbody>" +
      rows.map((r) => "<tr>" + keys.map((k) => `<td>${typeof r[k] === "object" && r[k] !== null ? esc(JSON.stringify(r[k])) : fmt(r[k])}</td>`).join("") + "</tr>").join("") +
      "</tbody></table></div>";
  }

  function chart(parent, id, title, runs, name, colourOf) {
    const figure = document.createElement("figure");
    const series = runs.filter((r) => r.curves[name]).map((r) => ({ run: r, points: r.curves[name] }));
    figure.innerHTML = `<canvas id="chart-${id}" width="620" height="260" role="img" aria-label="${esc(title)}: ${series.length} runs"></canvas>` +
      `<figcaption>${esc(title)}</figcaption><ul class="legend" id="legend-${id}">` +
      series.map((s) => `<li data-run="${s.run.row.id}"><span style="background:${colourOf.get(s.run.row.id)}"></span>${esc(s.run.label)}</li>`).join("") + "</ul>";
    parent.appendChild(figure);
    const canvas = figure.querySelector("canvas"), ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
    const all = series.flatMap((s) => s.points);
    if (!all.length) return;
    const x0 = Math.min(...all.map((p) => p[0])), x1 = Math.max(x0 + 1e-9, ...all.map((p) => p[0]));
    const y0 = Math.min(0, ...all.map((p) => p[1])), y1 = Math.max(y0 + 1e-9, ...all.map((p) => p[1]));
    const X = (v) => 50 + ((v - x0) / (x1 - x0)) * (w - 60), Y = (v) => h - 25 - ((v - y0) / (y1 - y0)) * (h - 40);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, w, h);
    ctx.strokeStyle = "#6b6b6b"; ctx.lineWidth = 1; ctx.beginPath();
    ctx.moveTo(50, 10); ctx.lineTo(50, h - 25); ctx.lineTo(w - 10, h - 25); ctx.stroke();
    ctx.fillStyle = "#1b1b1b"; ctx.font = "11px system-ui, sans-serif";
    ctx.fillText(y1.toFixed(1), 4, 14); ctx.fillText(y0.toFixed(1), 4, h - 25);
    ctx.fillText(x0.toFixed(0), 50, h - 8); ctx.fillText(x1.toFixed(0), w - 40, h - 8);
    for (const s of series) {
      ctx.strokeStyle = colourOf.get(s.run.row.id); ctx.lineWidth = 2; ctx.beginPath();
      s.points.forEach(([x, y], k) => (k ? ctx.lineTo(X(x), Y(y)) : ctx.moveTo(X(x), Y(y))));
      ctx.stroke();
    }
  }

  async function loadSweeps() {
    try {
      const sweeps = await fetchJson("/api/sweeps");
      $("sweeps").tBodies[0].innerHTML = sweeps.map((w) => w.error
        ? `<tr><td>${esc(w.name)}</td><td>${esc(w.file)}</td><td colspan="4">${esc(w.error)}</td></tr>`
        : `<tr data-sweep="${esc(w.name)}"><td>${esc(w.name)}</td><td>${esc(w.file)}</td><td>${esc(w.mode)}</td>` +
          `<td>${w.cells}</td><td>${w.stored}</td><td><button type="button" data-sweep="${esc(w.name)}"` +
          `${w.stored ? "" : " disabled"}>Show report</button></td></tr>`).join("");
    } catch (err) {
      $("sweeps").tBodies[0].innerHTML = `<tr><td colspan="6">${esc(err.message)}</td></tr>`;
    }
  }
  async function showSweep(name) {
    const report = await fetchJson(`/api/sweeps/${encodeURIComponent(name)}`);
    $("sweep-title").textContent = `${report.name}: ${report.stored} of ${report.cells} cells stored` +
      (report.worst_delta === null ? "" : `; largest distance to a published mean ${report.worst_delta.toFixed(2)} points`);
    const charts = $("sweep-charts");
    charts.innerHTML = "";
    const traces = [...new Set(report.curves.map((c) => c.trace))];
    traces.forEach((trace, t) => {
      const bySched = new Map();
      for (const c of report.curves.filter((c) => c.trace === trace)) {
        if (!bySched.has(c.scheduler)) bySched.set(c.scheduler, []);
        bySched.get(c.scheduler).push([c.arrived_gpu_pct, c.mean]);
      }
      const series = [...bySched].map(([sched, points]) => ({ row: { id: sched }, label: sched, curves: { mean: points } }));
      const colourOf = new Map(series.map((r, k) => [r.row.id, COLOURS[k % COLOURS.length]]));
      chart(charts, `sweep-${t}`, `${trace}: GPU allocated (%, mean over seeds) against arrived (%)`, series, "mean", colourOf);
    });
    $("sweep-tables").innerHTML = table("Summary (mean ± std over seeds)", report.summary);
    $("sweep-report").hidden = false;
    ui.sweeps += 1;
  }
  $("sweeps").addEventListener("click", (ev) => {
    const name = ev.target.dataset && ev.target.dataset.sweep;
    if (name && ev.target.tagName === "BUTTON") showSweep(name).catch((err) => { $("sweep-title").textContent = err.message; });
  });

  async function loadModels() {
    try {
      const data = await fetchJson("/api/models");
      state.cards = data.cards;
      $("model-count").textContent = `(${data.cards.length})`;
      $("models").tBodies[0].innerHTML = data.cards.map((c, k) =>
        `<tr data-model="${esc(c.ref)}"><td>${esc(c.ref)}</td><td>${esc(c.kind)}</td><td>${esc(c.created)}</td>` +
        `<td>${esc(Object.entries(c.metrics).map(([m, v]) => `${m}=${typeof v === "number" ? +v.toFixed(4) : JSON.stringify(v)}`).join(", "))}</td>` +
        `<td>${esc(c.data_checksum.slice(0, 12))}</td><td><button type="button" data-card="${k}">Show card</button></td></tr>`).join("");
      $("bad-cards").innerHTML = data.bad.map((line) => `<li>${esc(line)}</li>`).join("");
    } catch (err) {
      $("model-count").textContent = `(unavailable: ${err.message})`;
    }
  }
  $("models").addEventListener("click", (ev) => {
    const k = ev.target.dataset && ev.target.dataset.card;
    if (k === undefined) return;
    $("card").textContent = JSON.stringify(state.cards[Number(k)], null, 2);
    $("card").hidden = false;
    $("card").focus();
  });
  const state = { cards: [] };

  // Decisions of a run, and the explanation of one (GET /api/runs/{id}/decisions, /explain/{pod}).
  const dec = { run: null, offset: 0, pod: null };
  async function showDecisions(run, offset) {
    const data = await fetchJson(`/api/runs/${run}/decisions?offset=${offset}&limit=100`);
    Object.assign(dec, { run, offset });
    $("decisions-title").textContent = `Decisions of run ${run} (${data.total}; from #${offset})`;
    $("decisions").tBodies[0].innerHTML = data.decisions.map((d) =>
      `<tr data-pod="${d.pod}"><td>${d.seq}</td><td>${esc(d.pod_name)} (#${d.pod})</td>` +
      `<td>${d.node === null ? "not placed: " + esc(d.reason) : esc(d.node)}</td><td>${esc(d.scheduler || "-")}</td>` +
      `<td>${d.fallback ? "yes" : ""}</td><td><button type="button" data-explain="${d.pod}" ` +
      `aria-label="Why did pod ${esc(d.pod_name)} go there?">Why?</button></td></tr>`).join("");
    $("decisions-prev").disabled = offset === 0;
    $("decisions-next").disabled = offset + data.decisions.length >= data.total;
    $("decisions-section").hidden = false;
    ui.decisions += 1;
  }
  function facts(e) {
    const rows = [["Runner-up", e.runner_up ? `${e.runner_up.name} (total ${e.runner_up.total})` : ""],
      ["Margin", e.margin === null ? "" : String(e.margin)], ["Tie-break", e.tie_break],
      ["Fallback", e.fallback], ["Moved by", e.moved_by]].filter(([, v]) => v);
    return rows.map(([k, v]) => `<dt>${k}</dt><dd>${esc(v)}</dd>`).join("");
  }
  async function explainPod(pod, to) {
    const query = `top=5${to ? `&to=${encodeURIComponent(to)}` : ""}`;
    const e = await fetchJson(`/api/runs/${dec.run}/explain/${encodeURIComponent("#" + pod)}?${query}`);
    dec.pod = pod;
    $("explain-title").textContent = `Pod ${e.pod_name} (#${e.pod}) ` +
      (e.chosen_name ? `went to ${e.chosen_name} (GPUs ${e.gpus.join(", ") || "none"}), by ${e.decided_by}` : `was not placed: ${e.reason}`);
    const removed = Object.entries(e.filters.removed).map(([r, n]) => `${n} ${r}`).join(", ") || "none";
    $("explain-filters").textContent = `Filters: ${e.filters.eligible} of ${e.filters.nodes} nodes eligible; removed: ${removed}.`;
    const terms = [...new Set(e.ranking.flatMap((c) => Object.keys(c.terms)))];
    $("explain-ranking").innerHTML = e.ranking.length ? `<caption>Ranked by ${esc(e.ranking_by)}</caption><thead><tr><th scope="col">Place</th><th scope="col">Node</th>` +
      terms.map((t) => `<th scope="col">${esc(t)}</th>`).join("") + `<th scope="col">Total</th><th scope="col">Tie rank</th></tr></thead><tbody>` +
      e.ranking.map((c, k) => `<tr class="${c.node === e.chosen ? "chosen" : ""}"><td>${c.node === e.chosen ? "chosen" : k + 1}</td><td>${esc(c.name)}</td>` +
        terms.map((t) => `<td>${fmt(c.terms[t])}</td>`).join("") + `<td>${c.total}</td><td>${c.rank}</td></tr>`).join("") + "</tbody>" : "";
    $("explain-facts").innerHTML = facts(e);
    $("explain-parts").hidden = !Object.keys(e.parts).length;
    $("explain-parts").textContent = JSON.stringify(e.parts, null, 2);
    $("whatif-nodes").innerHTML = e.ranking.map((c) => `<option value="${esc(c.name)}">`).join("");
    const cf = e.counterfactual;
    $("whatif-result").innerHTML = !cf ? "" : cf.valid ? `<p>${esc(cf.node)} could not take it: ${esc(cf.valid)}</p>` :
      table(`What if ${cf.node} instead of ${e.chosen_name || "nowhere"}`, Object.keys(cf.to).map((k) =>
        ({ figure: k, [e.chosen_name || "chosen"]: cf.chosen[k], [cf.node]: cf.to[k], change: cf.delta[k] })));
    $("explain-source").textContent = e.source;
    $("explain-panel").hidden = false;
    ui.explains += 1;
  }
  const shout = (err) => { $("explain-title").textContent = err.message; $("explain-panel").hidden = false; };
  $("runs").addEventListener("click", (ev) => {
    const run = ev.target.dataset && ev.target.dataset.decisions;
    if (run) showDecisions(Number(run), 0).catch((err) => { $("store-status").textContent = err.message; });
  });
  $("decisions").addEventListener("click", (ev) => {
    const pod = ev.target.dataset && ev.target.dataset.explain;
    if (pod !== undefined) explainPod(Number(pod)).catch(shout);
  });
  $("decisions-prev").addEventListener("click", () => showDecisions(dec.run, Math.max(dec.offset - 100, 0)));
  $("decisions-next").addEventListener("click", () => showDecisions(dec.run, dec.offset + 100));
  $("whatif").addEventListener("submit", (ev) => {
    ev.preventDefault();
    explainPod(dec.pod, new FormData($("whatif")).get("to")).catch(shout);
  });

  $("filters").addEventListener("submit", (ev) => { ev.preventDefault(); loadRuns(); });
  $("runs").addEventListener("change", (ev) => {
    const id = Number(ev.target.value);
    if (ev.target.checked) selected.add(id); else selected.delete(id);
    $("compare").disabled = selected.size === 0;
  });
  $("compare").addEventListener("click", () => compare().catch((err) => { $("store-status").textContent = err.message; }));
  loadRuns();
  loadSweeps();
  loadModels();
})();
