// The explorer's comparison charts, drawn by uPlot (static/vendor/uplot, MIT, from the npm
// registry): hover values in the legend, drag to zoom (double-click resets), y axis scaled to
// the data (not from 0), a mean ± std band per group of seeds, PNG, SVG and CSV downloads of what
// is shown. window.explorerCharts.draw(parent, spec) returns the uPlot instance.
"use strict";
(function () {
  const COLOURS = ["#0b5394", "#c0392b", "#1e7b34", "#8e44ad", "#b35900", "#006d77", "#5c5c5c",
                   "#a61e4d", "#2f4b7c", "#665191", "#7a5c00", "#00539c"];
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const num = (v) => (v === null || v === undefined || Number.isNaN(v) ? "" : +v.toFixed(4));

  // Points of several series on one x grid: [xs, ys1, ys2, ...] (gaps are null).
  function align(pointLists) {
    return uPlot.join(pointLists.map((pts) => [pts.map((p) => p[0]), pts.map((p) => p[1])]));
  }

  // Per group: mean, mean - std and mean + std at each x over the group's members.
  function stats(columns) {
    const n = columns[0].length, mean = [], lo = [], hi = [];
    for (let i = 0; i < n; i++) {
      const v = columns.map((c) => c[i]).filter((y) => y !== null && y !== undefined);
      if (!v.length) { mean.push(null); lo.push(null); hi.push(null); continue; }
      const m = v.reduce((a, b) => a + b, 0) / v.length;
      const sd = v.length > 1 ? Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)) : 0;
      mean.push(m); lo.push(m - sd); hi.push(m + sd);
    }
    return { mean, lo, hi };
  }

  // A padded range around the data: autoscaled, never pinned to 0.
  function around(u, min, max) {
    if (min === null || max === null) return [0, 1];
    const pad = (max - min) * 0.06 || Math.abs(max) * 0.02 || 1;
    return [min - pad, max + pad];
  }

  // spec: {id, title, x, y, xLabel, yLabel, groups: [{label, runs: [{id, label, points}]}], grouped}
  function build(spec) {
    const members = spec.groups.flatMap((g) => g.runs);
    const aligned = align(members.map((r) => r.points));
    const data = [aligned[0]], series = [{ label: spec.xLabel }], bands = [];
    let k = 1;
    spec.groups.forEach((g, gi) => {
      const colour = COLOURS[gi % COLOURS.length];
      const cols = g.runs.map(() => aligned[k++]);
      if (spec.grouped && cols.length > 1) {
        const s = stats(cols), at = data.length;
        data.push(s.mean, s.hi, s.lo);
        series.push({ label: `${g.label}: mean of ${cols.length}`, stroke: colour, width: 2, value: (u, v) => num(v) },
          { label: `${g.label}: mean + std`, stroke: colour + "66", width: 1, value: (u, v) => num(v) },
          { label: `${g.label}: mean − std`, stroke: colour + "66", width: 1, value: (u, v) => num(v) });
        bands.push({ series: [at + 1, at + 2], fill: colour + "33" });
      } else {
        g.runs.forEach((r, ri) => {
          data.push(cols[ri]);
          series.push({ label: r.label, stroke: COLOURS[(gi + ri) % COLOURS.length], width: 1.5,
                        dash: spec.grouped ? [] : ri % 2 ? [6, 3] : [], value: (u, v) => num(v) });
        });
      }
    });
    return { data, series, bands };
  }

  function download(name, href) {
    const a = document.createElement("a");
    a.href = href; a.download = name; document.body.appendChild(a); a.click(); a.remove();
  }

  // The shown series over the shown x range, as CSV (header: the human names).
  function csv(u, xLabel) {
    const xs = u.data[0], min = u.scales.x.min, max = u.scales.x.max;
    const shown = u.series.map((s, i) => i).filter((i) => i > 0 && u.series[i].show);
    const quote = (s) => `"${String(s).replace(/"/g, '""')}"`;
    const lines = [[xLabel, ...shown.map((i) => u.series[i].label)].map(quote).join(",")];
    for (let r = 0; r < xs.length; r++) {
      if (xs[r] < min || xs[r] > max) continue;
      lines.push([num(xs[r]), ...shown.map((i) => num(u.data[i][r]))].join(","));
    }
    return lines.join("\n") + "\n";
  }

  function png(u, title) {
    const src = u.ctx.canvas, out = document.createElement("canvas");
    out.width = src.width; out.height = src.height + 30;
    const ctx = out.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, out.width, out.height);
    ctx.fillStyle = "#1b1b1b"; ctx.font = "bold 14px system-ui, sans-serif"; ctx.fillText(title, 8, 20);
    ctx.drawImage(src, 0, 30);
    return out.toDataURL("image/png");
  }

  // The chart as SVG: frame, ticks, bands and lines of the shown series over the shown range.
  function svg(u, title) {
    const dpr = window.devicePixelRatio || 1, top = 30;
    const L = u.bbox.left / dpr, T = u.bbox.top / dpr + top, W = u.bbox.width / dpr, H = u.bbox.height / dpr;
    const paint = (v, i) => (typeof v === "function" ? v(u, i) : v);
    const X = (v) => (L + u.valToPos(v, "x")).toFixed(1), Y = (v) => (T + u.valToPos(v, "y")).toFixed(1);
    const xs = u.data[0], inside = (r) => xs[r] >= u.scales.x.min && xs[r] <= u.scales.x.max;
    const points = (i) => xs.map((x, r) => (inside(r) && u.data[i][r] !== null && u.data[i][r] !== undefined ? `${X(x)},${Y(u.data[i][r])}` : null)).filter(Boolean);
    const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${u.width}" height="${u.height + top}" viewBox="0 0 ${u.width} ${u.height + top}" font-family="sans-serif" font-size="11">`,
      `<rect width="100%" height="100%" fill="#fff"/><text x="8" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
      `<clipPath id="plot"><rect x="${L}" y="${T}" width="${W}" height="${H}"/></clipPath>`,
      `<rect x="${L}" y="${T}" width="${W}" height="${H}" fill="none" stroke="#6b6b6b"/>`];
    for (const [key, n] of [["x", 6], ["y", 5]]) {
      const { min, max } = u.scales[key];
      for (let k = 0; k <= n; k++) {
        const v = min + ((max - min) * k) / n, label = +v.toPrecision(4);
        out.push(key === "x" ? `<text x="${X(v)}" y="${T + H + 14}" text-anchor="middle">${label}</text>`
          : `<text x="${L - 4}" y="${Y(v)}" text-anchor="end" dominant-baseline="middle">${label}</text>`);
      }
    }
    out.push(`<text x="${L + W / 2}" y="${T + H + 30}" text-anchor="middle">${esc(u.series[0].label)}</text>`);
    for (const b of u.bands || []) {
      const [hi, lo] = b.series;
      if (!u.series[hi].show || !u.series[lo].show) continue;
      const ring = [...points(hi), ...points(lo).reverse()].join(" ");
      out.push(`<polygon class="band" clip-path="url(#plot)" points="${ring}" fill="${paint(b.fill, hi)}" stroke="none"/>`);
    }
    u.series.forEach((s, i) => {
      if (i === 0 || !s.show) return;
      out.push(`<polyline class="series" clip-path="url(#plot)" fill="none" stroke="${paint(s.stroke, i)}" stroke-width="${s.width || 1}" points="${points(i).join(" ")}"><title>${esc(s.label)}</title></polyline>`);
    });
    return out.join("\n") + "\n</svg>\n";
  }

  function draw(parent, spec) {
    const figure = document.createElement("figure");
    figure.id = `figure-${spec.id}`;
    figure.innerHTML = `<figcaption>${esc(spec.title)}</figcaption><div class="plot" id="chart-${spec.id}" role="img" ` +
      `aria-label="${esc(spec.title)}"></div><p class="chart-tools"><button type="button" data-png>Download PNG</button> <button type="button" data-svg>Download SVG</button> ` +
      `<button type="button" data-csv>Download CSV (what is shown)</button> <span class="note">Drag to zoom, double-click to reset.</span></p>`;
    parent.appendChild(figure);
    const { data, series, bands } = build(spec);
    const width = Math.max(280, Math.min(parent.clientWidth - 16, 760));
    const u = new uPlot({
      width, height: 280, series, bands,
      scales: { x: { time: false }, y: { range: around } },
      axes: [{ label: spec.xLabel }, { label: spec.yLabel, size: 60 }],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
    }, data, figure.querySelector(".plot"));
    figure.querySelector("[data-png]").addEventListener("click", () => download(`${spec.id}.png`, png(u, spec.title)));
    figure.querySelector("[data-svg]").addEventListener("click", () =>
      download(`${spec.id}.svg`, URL.createObjectURL(new Blob([svg(u, spec.title)], { type: "image/svg+xml" }))));
    figure.querySelector("[data-csv]").addEventListener("click", () =>
      download(`${spec.id}.csv`, URL.createObjectURL(new Blob([csv(u, spec.xLabel)], { type: "text/csv" }))));
    figure.uplot = u;
    return u;
  }

  window.explorerCharts = { draw, csv, stats };
})();
