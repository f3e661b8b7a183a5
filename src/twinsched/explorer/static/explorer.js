// The run explorer: filters and the run table from /api/runs, charts and tables from
// /api/compare. Read-only: every request is a GET.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const fmt = (v) => (v === null || v === undefined ? "-" : typeof v === "number" ? (Number.isInteger(v) ? v : v.toFixed(3)) : esc(v));
  const selected = new Set();
  // Read by the browser tests.
  const ui = (window.explorerUi = { loads: 0, compares: 0, sweeps: 0, decisions: 0, explains: 0 });
  ui.problem = (status, body) => problem(status, body);

  // A 4xx/5xx as one readable line: FastAPI's validation list becomes "where: what".
  function problem(status, body) {
    const d = body && body.detail;
    const text = Array.isArray(d) ? d.map((e) => `${(e.loc || []).slice(1).join(".") || "request"}: ${e.msg}`).join("; ")
      : typeof d === "string" ? d : JSON.stringify(body);
    return `${status}: ${text}`;
  }
  async function fetchJson(url) {
    const answer = await fetch(url);
    if (!answer.ok) throw new Error(problem(answer.status, await answer.json().catch(() => null)));
    return answer.json();
  }

  // The run table: one page from the server, filtered, sorted and counted there.
  const FACETS = ["trace", "variant", "scheduler", "mode", "status", "sweep", "model"];
  const COLUMNS = [["id", ""], ["trace", ""], ["scheduler", ""], ["seed", ""], ["mode", ""], ["alloc_pct", ""],
    ["alloc_end_pct", "opt"], ["energy_kwh", "opt"], ["wall_s", "opt"], ["status", "opt"], ["created", "opt"]];
  const SORTABLE = new Set(["id", "created", "trace", "scheduler", "seed", "mode", "status", "wall_s", "energy_kwh", "alloc_pct", "alloc_end_pct"]);
  const view = (window.explorerView = { sort: "id", order: "desc", offset: 0, limit: 50, total: 0, headers: {}, serverMs: null });
  const head = (k) => view.headers[k] || k;

  function query() {
    const params = new URLSearchParams();
    for (const [key, value] of new FormData($("filters"))) if (value) params.set(key, value);
    Object.entries({ sort: view.sort, order: view.order, offset: view.offset, limit: view.limit }).forEach(([k, v]) => params.set(k, v));
    return params;
  }
  function facetOptions(facets) {
    for (const name of FACETS) {
      const select = $(`facet-${name}`), chosen = select.value;
      const values = facets[name] || [];
      select.innerHTML = `<option value="">any</option>` + values.map((f) =>
        `<option value="${esc(f.value)}">${esc(f.value)} (${f.count.toLocaleString("en")})</option>`).join("");
      if (chosen && !values.some((f) => f.value === chosen)) select.insertAdjacentHTML("beforeend", `<option value="${esc(chosen)}">${esc(chosen)} (0)</option>`);
      select.value = chosen;
    }
  }
  function tableHead() {
    $("runs").tHead.innerHTML = `<tr><th scope="col">Compare</th>` + COLUMNS.map(([k, cls]) => {
      const mark = view.sort === k ? (view.order === "desc" ? " ▼" : " ▲") : "";
      const sorted = view.sort === k ? ` aria-sort="${view.order === "desc" ? "descending" : "ascending"}"` : "";
      const label = SORTABLE.has(k) ? `<button type="button" class="sort" data-sort="${k}">${esc(head(k))}${mark}</button>` : esc(head(k));
      return `<th scope="col" class="${cls}"${sorted}>${label}</th>`;
    }).join("") + `<th scope="col">Report</th><th scope="col">Decisions</th></tr>`;
  }
  async function loadRuns() {
    try {
      const page = await fetchJson(`/api/runs?${query()}`);
      Object.assign(view, { total: page.total, headers: { ...view.headers, ...page.headers }, serverMs: page.server_ms });
      facetOptions(page.facets);
      tableHead();
      const last = Math.min(view.offset + page.rows.length, page.total);
      $("run-count").textContent = `(${page.total ? view.offset + 1 : 0}-${last} of ${page.total.toLocaleString("en")}; server ${page.server_ms} ms)`;
      $("runs").tBodies[0].innerHTML = page.rows.map((r) =>
        `<tr data-run="${r.id}"><td><input type="checkbox" id="pick-${r.id}" value="${r.id}"` +
        `${selected.has(r.id) ? " checked" : ""} aria-label="Compare run ${r.id}"></td>` +
        COLUMNS.map(([k, cls]) => `<td class="${cls}">${fmt(r[k])}</td>`).join("") +
        `<td><a href="/runs/${r.id}/report">Report<span class="sr"> of run ${r.id}</span></a></td>` +
        `<td><button type="button" data-decisions="${r.id}">Decisions</button></td></tr>`).join("");
      $("page-prev").disabled = view.offset === 0;
      $("page-next").disabled = last >= page.total;
      $("store-status").textContent = "store: connected";
    } catch (err) {
      $("store-status").textContent = `store: ${err.message}`;
    }
    ui.loads += 1;
  }
  $("runs").addEventListener("click", (ev) => {
    const key = ev.target.closest && ev.target.closest("button.sort");
    if (!key) return;
    const k = key.dataset.sort;
    view.order = view.sort === k && view.order === "desc" ? "asc" : "desc";
    view.sort = k; view.offset = 0;
    loadRuns();
  });
  $("page-prev").addEventListener("click", () => { view.offset = Math.max(0, view.offset - view.limit); loadRuns(); });
  $("page-next").addEventListener("click", () => { view.offset += view.limit; loadRuns(); });

  // The comparison: charts per mode, grouped by scheduler (mean ± std over seeds) or per run.
  let lastCompare = null;
  async function compare() {
    const ids = [...selected];
    if (!ids.length) return;
    $("compare-error").textContent = "";
    try {
      lastCompare = await fetchJson(`/api/compare?${ids.map((i) => `ids=${i}`).join("&")}`);
    } catch (err) {
      $("compare-error").textContent = `The comparison failed: ${err.message}`;
      $("comparison").hidden = false;
      ui.compares += 1;
      return;
    }
    render(lastCompare);
  }
  function groupsOf(runs, name) {
    const groups = new Map();
    for (const r of runs.filter((r) => r.curves && r.curves[name])) {
      const key = `${r.row.scheduler} on ${r.row.trace}`;
      if (!groups.has(key)) groups.set(key, { label: key, runs: [] });
      groups.get(key).runs.push({ id: r.row.id, label: r.label, points: r.curves[name] });
    }
    return [...groups.values()];
  }
  function render(data) {
    view.headers = { ...view.headers, ...data.headers };
    const grouped = $("group-by").checked, charts = $("charts");
    charts.innerHTML = "";
    $("comparison").hidden = false;  // shown first: the charts take its width
    for (const mode of ["fillup", "replay"]) {
      const runs = data.runs.filter((r) => r.row.mode === mode && r.curves);
      if (!runs.length) continue;
      const names = mode === "fillup" ? ["gpu_alloc_ratio_pct"] : ["pending", "gpu_alloc_ratio_pct", "power_w"];
      for (const name of names) {
        const groups = groupsOf(runs, name);
        if (!groups.length) continue;
        const x = runs[0].x, id = mode === "fillup" ? "alloc" : `replay-${name}`;
        window.explorerCharts.draw(charts, { id, x, y: name, xLabel: head(x), yLabel: head(name), grouped, groups,
          title: `${head(name)} against ${head(x)}${grouped && groups.some((g) => g.runs.length > 1) ? ", mean ± std over seeds per scheduler" : ""}` });
      }
    }
    $("compared-runs").innerHTML = data.runs.map((r) =>
      `<li data-run="${r.row.id}"><a href="/runs/${r.row.id}/report">${esc(r.label)}</a></li>`).join("");
    $("tables").innerHTML = Object.entries(data.tables).map(([mode, rows]) => table(`By scheduler (${mode})`, rows)).join("") +
      table("Per run", data.runs.map((r) => ({ run: r.label, ...(r.summary || {}) })));
    $("comparison").hidden = false;
    ui.compares += 1;
  }
  $("group-by").addEventListener("change", () => { if (lastCompare) render(lastCompare); });

  function table(title, rows) {
    if (!rows.length) return "";
    const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    return `<h3>${esc(title)}</h3><div class="scroll" tabindex="0" role="region" aria-label="${esc(title)}"><table><thead><tr>` +
      keys.map((k) => `<th scope="col">${esc(head(k))}</th>`).join("") + "</tr></thead><tbody>" +
      rows.map((r) => "<tr>" + keys.map((k) => `<td>${typeof r[k] === "object" && r[k] !== null ? esc(JSON.stringify(r[k])) : fmt(r[k])}</td>`).join("") + "</tr>").join("") +
      "</tbody></table></div>";
  }

  async function loadSweeps() {
    try {
      const sweeps = await fetchJson("/api/sweeps");
      state.sweeps = sweeps;
      $("sweeps").tBodies[0].innerHTML = sweeps.map((w, k) =>
        `<tr data-sweep="${esc(w.name)}"><td>${esc(w.name)}</td><td>${esc(w.grid)} <button type="button" data-spec="${k}">Show spec</button></td>` +
        `<td>${esc(w.mode)}</td><td>${w.cells}</td><td>${w.stored}</td><td><button type="button" data-sweep="${esc(w.name)}"` +
        `${w.stored ? "" : " disabled"}>Show report</button></td></tr>`).join("");
    } catch (err) {
      $("sweeps").tBodies[0].innerHTML = `<tr><td colspan="6">${esc(err.message)}</td></tr>`;
    }
  }
  async function showSweep(name) {
    const report = await fetchJson(`/api/sweeps/${encodeURIComponent(name)}`);
    $("sweep-title").textContent = `${report.name} (${report.grid}): ${report.stored} of ${report.cells} cells stored` +
      (report.worst_delta === null ? "" : `; largest distance to a published mean ${report.worst_delta.toFixed(2)} points`);
    const charts = $("sweep-charts");
    charts.innerHTML = "";
    $("sweep-report").hidden = false;
    const traces = [...new Set(report.curves.map((c) => c.trace))];
    traces.forEach((trace, t) => {
      const bySched = new Map();
      for (const c of report.curves.filter((c) => c.trace === trace)) {
        if (!bySched.has(c.scheduler)) bySched.set(c.scheduler, []);
        bySched.get(c.scheduler).push([c.arrived_gpu_pct, c.mean]);
      }
      const groups = [...bySched].map(([sched, points]) => ({ label: sched, runs: [{ id: sched, label: sched, points }] }));
      window.explorerCharts.draw(charts, { id: `sweep-${t}`, x: "arrived_gpu_pct", y: "mean", grouped: false, groups,
        xLabel: head("arrived_gpu_pct"), yLabel: "GPU allocated, mean over seeds (%)",
        title: `${trace}: GPU allocated (%, mean over seeds) against GPU workload arrived (%)` });
    });
    $("sweep-tables").innerHTML = table("Summary (mean ± std over seeds)", report.summary);
    $("sweep-report").hidden = false;
    ui.sweeps += 1;
  }
  $("sweeps").addEventListener("click", (ev) => {
    const d = ev.target.dataset || {};
    if (d.spec !== undefined) {
      $("sweep-spec").textContent = JSON.stringify(state.sweeps[Number(d.spec)].spec, null, 2);
      $("sweep-spec").hidden = false;
    }
    if (d.sweep && ev.target.tagName === "BUTTON") showSweep(d.sweep).catch((err) => { $("sweep-title").textContent = err.message; $("sweep-report").hidden = false; });
  });

  async function loadModels() {
    try {
      const data = await fetchJson("/api/models");
      state.cards = data.cards;
      const shipped = data.cards.filter((c) => c.shipped).length;
      $("model-count").textContent = `(${data.cards.length}: ${shipped} shipped, ${data.cards.length - shipped} yours)`;
      $("models").tBodies[0].innerHTML = data.cards.map((c, k) =>
        `<tr data-model="${esc(c.ref)}"><td>${esc(c.ref)}</td><td>${c.shipped ? "shipped" + (c.hidden ? " (hidden by yours)" : "") : "yours"}</td>` +
        `<td>${esc(c.kind)}</td><td>${esc(c.created)}</td><td>${Object.keys(c.metrics).length}</td>` +
        `<td>${esc(c.data_checksum.slice(0, 12))}</td><td><button type="button" data-card="${k}">Show card</button></td></tr>`).join("");
      $("bad-cards").innerHTML = data.bad.map((line) => `<li>${esc(line)}</li>`).join("");
    } catch (err) {
      $("model-count").textContent = `(unavailable: ${err.message})`;
    }
  }
  $("models").addEventListener("click", (ev) => {
    const k = ev.target.dataset && ev.target.dataset.card;
    if (k === undefined) return;
    const card = state.cards[Number(k)];
    const figures = Object.entries(card.metrics).map(([m, v]) => ({ figure: m, value: typeof v === "number" ? v : JSON.stringify(v) }));
    $("card-figures").innerHTML = table(`Figures of ${card.ref}`, figures);
    $("card").textContent = JSON.stringify(card, null, 2);
    $("card").hidden = false;
    $("card").focus();
  });
  const state = { cards: [], sweeps: [] };

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

  $("filters").addEventListener("submit", (ev) => { ev.preventDefault(); view.offset = 0; loadRuns(); });
  $("filters").addEventListener("change", (ev) => { if (ev.target.tagName === "SELECT") { view.offset = 0; loadRuns(); } });
  $("runs").addEventListener("change", (ev) => {
    const id = Number(ev.target.value);
    if (ev.target.checked) selected.add(id); else selected.delete(id);
    $("compare").disabled = selected.size === 0;
    $("compare").textContent = `Compare selected (${selected.size})`;
  });
  $("compare").addEventListener("click", () => compare());
  loadRuns();
  loadSweeps();
  loadModels();
})();
