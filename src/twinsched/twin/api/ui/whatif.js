// The what-if panel: POST /api/v1/whatif, poll the job, draw the comparison (bars: mean over
// seeds; whiskers: min and max) and a table of every figure.
"use strict";
(function () {
  const API = "/api/v1";
  const $ = (id) => document.getElementById(id);
  const FIGURES = {
    gpu_alloc_pct: "GPU allocated (%)", cpu_alloc_pct: "CPU allocated (%)",
    queue_wait_s: "Queue wait (s)", completed: "Completed pods", pending_at_end: "Pending at end",
    energy_kwh: "Energy (kWh)", carbon_kg: "Carbon (kg CO2)",
  };
  const COLOURS = ["#0b5394", "#b45f06", "#38761d", "#741b47", "#134f5c", "#7f6000", "#990000", "#351c75"];
  // Read by the browser tests: the last result and the bars drawn.
  const panel = (window.twinWhatif = { result: null, bars: [], polls: 0 });
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  function seeds(text) {
    const out = [];
    for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
      const m = part.match(/^(\d+)(?:-(\d+))?$/);
      if (!m) throw new Error(`seeds: ${part} is not a number or a range like 0-4`);
      const lo = +m[1], hi = m[2] === undefined ? lo : +m[2];
      for (let s = lo; s <= hi && out.length <= 20; s++) out.push(s);
    }
    return out;
  }
  async function send(method, url, body) {
    const r = await fetch(url, { method, headers: { "Content-Type": "application/json" },
                                 body: body ? JSON.stringify(body) : undefined });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.detail || `HTTP ${r.status}`);
    return data;
  }
  async function run(ev) {
    ev.preventDefault();
    const status = $("whatif-status");
    $("whatif-run").disabled = true;
    try {
      const body = { schedulers: $("whatif-schedulers").value.split(",").map((s) => s.trim()).filter(Boolean),
                     horizon_s: +$("whatif-horizon").value, seeds: seeds($("whatif-seeds").value) };
      let job = await send("POST", `${API}/whatif`, body);
      while (job.status === "queued" || job.status === "running") {
        status.textContent = `Running: ${job.progress.done} of ${job.progress.total} runs`;
        await new Promise((ok) => setTimeout(ok, 200));
        job = await send("GET", `${API}/whatif/${job.job}`);
        panel.polls += 1;
      }
      if (job.status === "failed") throw new Error(job.error);
      panel.result = job.result;
      const f = job.result.fork;
      status.textContent = `Done: version ${job.result.version}, ${f.nodes} nodes, ${f.running} running, ` +
        `${f.pending} pending, ${job.result.seeds.length} seeds, ${job.result.wall_s} s.`;
      render();
    } catch (err) {
      status.textContent = `What-if failed: ${err.message}`;
    } finally {
      $("whatif-run").disabled = false;
    }
  }
  function render() {
    const result = panel.result;
    if (!result) return;
    const key = $("whatif-figure").value;
    draw(result, key);
    const head = Object.values(FIGURES).map((t) => `<th scope="col">${esc(t)}</th>`).join("");
    $("whatif-table").tHead.innerHTML = `<tr><th scope="col">Scheduler</th>${head}</tr>`;
    $("whatif-table").tBodies[0].innerHTML = result.schedulers.map((s) => {
      const cells = Object.keys(FIGURES).map((k) => {
        const v = s.figures[k];
        return `<td>${v.mean.toFixed(2)} ± ${v.std.toFixed(2)}</td>`;
      }).join("");
      return `<tr><th scope="row">${esc(s.scheduler)}</th>${cells}</tr>`;
    }).join("");
  }
  function draw(result, key) {
    const canvas = $("whatif-chart"), ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
    const rows = result.schedulers.map((s) => ({ name: s.scheduler, ...s.figures[key] }));
    const hi = Math.max(1e-9, ...rows.map((r) => r.max)), left = 60, base = h - 30;
    ctx.clearRect(0, 0, w, h); ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, w, h);
    ctx.font = "12px system-ui, sans-serif";
    const slot = (w - left - 10) / Math.max(1, rows.length);
    panel.bars = rows.map((r, k) => {
      const x = left + k * slot + slot * 0.2, bw = slot * 0.6, y = (v) => base - (v / hi) * (base - 20);
      ctx.fillStyle = COLOURS[k % COLOURS.length]; ctx.fillRect(x, y(r.mean), bw, base - y(r.mean));
      ctx.strokeStyle = "#1b1b1b"; ctx.beginPath();
      ctx.moveTo(x + bw / 2, y(r.min)); ctx.lineTo(x + bw / 2, y(r.max));
      ctx.moveTo(x + bw / 3, y(r.min)); ctx.lineTo(x + 2 * bw / 3, y(r.min));
      ctx.moveTo(x + bw / 3, y(r.max)); ctx.lineTo(x + 2 * bw / 3, y(r.max)); ctx.stroke();
      ctx.fillStyle = "#1b1b1b"; ctx.fillText(r.name, x, h - 12);
      ctx.fillText(r.mean.toFixed(2), x, y(r.mean) - 4);
      return { scheduler: r.name, mean: r.mean, min: r.min, max: r.max, height: base - y(r.mean) };
    });
    ctx.fillText(hi.toFixed(1), 4, 24); ctx.fillText("0", 4, base);
    const text = `${FIGURES[key]}: ` + rows.map((r) => `${r.name} ${r.mean.toFixed(2)} (${r.min.toFixed(2)} to ${r.max.toFixed(2)})`).join("; ");
    $("whatif-caption").textContent = text;
    canvas.setAttribute("aria-label", text);
  }
  for (const [key, label] of Object.entries(FIGURES)) $("whatif-figure").add(new Option(label, key));
  $("whatif-figure").value = "queue_wait_s";
  $("whatif-figure").addEventListener("change", render);
  $("whatif-form").addEventListener("submit", run);
})();
