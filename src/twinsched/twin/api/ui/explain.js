// The explanation panel: "Why?" on a decision (or a click on its row) asks
// GET /api/v1/decisions/{seq}/explain and shows the filter counts per reason, the ranked
// candidates with their score terms and total, the chosen node and the runner-up with the
// margin, the tie-break, the fallback, the composite's part and what the twin does not know.
"use strict";
(function () {
  const API = "/api/v1";
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const fmt = (v) => (v === undefined || v === null ? "-" : typeof v === "number" ? String(+v.toFixed(3)) : String(v));
  // Read by the browser tests: explanations shown, errors shown, the last answer.
  const panel = (window.twinExplain = { explains: 0, errors: 0, last: null, seq: null, session: "", asked: 0 });

  panel.mark = () => {  // the explained decision's row, after the table is drawn again
    for (const row of $("decisions").tBodies[0].rows) {
      row.classList.toggle("selected", row.dataset.seq === String(panel.seq) && row.dataset.session === panel.session);
    }
  };
  async function explain(seq, session) {
    const asked = (panel.asked += 1);
    Object.assign(panel, { seq, session });
    panel.mark();
    $("explain-status").textContent = `Explaining decision ${seq}…`;
    const query = session ? `?session=${encodeURIComponent(session)}` : "";
    let answer, data;
    try {
      answer = await fetch(`${API}/decisions/${encodeURIComponent(seq)}/explain${query}`);
      data = await answer.json().catch(() => ({}));
    } catch (err) {
      answer = { ok: false, status: "no answer" };
      data = { detail: err.message };
    }
    if (asked !== panel.asked) return;  // a later click won
    if (!answer.ok) return failed(seq, answer.status, data);
    panel.last = data;
    $("explain-error").hidden = true;
    show(seq, data);
    panel.explains += 1;
    $("explain-body").dataset.explains = panel.explains;
  }
  function failed(seq, status, data) {
    const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || data);
    $("explain-body").hidden = true;
    $("explain-status").classList.add("visually-hidden");  // the alert says it
    $("explain-status").textContent = `Decision ${seq} cannot be explained.`;
    $("explain-error").textContent = `Decision ${seq} cannot be explained (HTTP ${status}): ${detail}`;
    $("explain-error").hidden = false;
    panel.errors += 1;
  }
  function show(seq, e) {
    const where = e.chosen_name ? `went to ${e.chosen_name} (GPUs ${e.gpus.join(", ") || "none"}), decided by ${e.decided_by}` :
      `was not placed: ${e.reason}`;
    const by = e.decided_by === e.scheduler ? "" : ` (the scheduler was ${e.scheduler})`;
    $("explain-title").textContent = `Decision ${seq}: pod ${e.pod_name} ${where}${by}.`;
    $("explain-status").textContent = `Decision ${seq} explained: pod ${e.pod_name} on ${e.chosen_name || "no node"}.`;
    const f = e.filters, removed = Object.entries(f.removed);
    $("explain-filters").textContent = `${f.eligible} of ${f.nodes} nodes passed every filter; ` +
      (removed.length ? `${f.nodes - f.eligible} removed, per reason (the first filter that rejects a node):` : "none removed.");
    $("explain-removed").parentElement.hidden = !removed.length;
    $("explain-removed").tBodies[0].innerHTML = removed.map(([r, n]) => `<tr><td>${esc(r)}</td><td>${n}</td></tr>`).join("");
    ranking(e);
    $("explain-facts").innerHTML = facts(e).map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("");
    $("explain-parts").innerHTML = parts(e.parts);
    const caveats = Object.entries((e.parts && e.parts.twin) || {});
    $("explain-caveats").hidden = !caveats.length;
    $("explain-caveat-list").innerHTML = caveats.map(([k, v]) => `<li><b>${esc(k)}</b>: ${esc(v)}</li>`).join("");
    $("explain-source").textContent = e.source ? `Explained on ${e.source}.` : "";
    $("explain-body").hidden = false;
    $("explain-status").classList.add("visually-hidden");  // said by the title; still announced
  }
  function ranking(e) {
    const terms = [...new Set(e.ranking.flatMap((c) => Object.keys(c.terms)))];
    const runner = e.runner_up ? e.runner_up.node : null;
    const place = (c, k) => (c.node === e.chosen ? "chosen" : c.node === runner ? `${k + 1}, runner-up` : String(k + 1));
    $("explain-ranking").innerHTML = !e.ranking.length ? "<caption>No node was eligible.</caption>" :
      `<caption>Top ${e.ranking.length}, ranked by ${esc(e.ranking_by)}</caption><thead><tr><th scope="col">Place</th>` +
      `<th scope="col">Node</th>${terms.map((t) => `<th scope="col">${esc(t)}</th>`).join("")}` +
      `<th scope="col">Total</th><th scope="col">Tie rank</th></tr></thead><tbody>` +
      e.ranking.map((c, k) => `<tr class="${c.node === e.chosen ? "chosen" : c.node === runner ? "runner-up" : ""}">` +
        `<td>${place(c, k)}</td><th scope="row">${esc(c.name)}</th>${terms.map((t) => `<td>${fmt(c.terms[t])}</td>`).join("")}` +
        `<td>${c.total}</td><td>${c.rank}</td></tr>`).join("") + "</tbody>";
  }
  function facts(e) {
    const top = e.ranking.length ? e.ranking[0].name : null;
    return [
      ["Chosen", e.chosen_name ? `${e.chosen_name}${top === e.chosen_name ? ", the top of the ranking" : ""}` : `none: ${e.reason}`],
      ["Runner-up", e.runner_up ? `${e.runner_up.name} (total ${e.runner_up.total})` : "none"],
      ["Margin", e.margin === null ? "-" : String(e.margin)],
      ["Tie-break", e.tie_break || (e.margin ? "none: the totals differ" : "none")],
      ["Fallback", e.fallback || "did not fire"],
      ["Moved by", e.moved_by || (top === null ? "-" : "nothing: the chosen node is the top of the ranking")],
    ];
  }
  function parts(all) {  // the composite's or model's own part; the twin's caveats apart
    const keys = Object.keys(all || {}).filter((k) => k !== "twin");
    if (!keys.length) return "";
    return `<h3>The scheduler's own part</h3><dl class="facts">` + keys.map((k) => `<dt>${esc(k)}</dt><dd>${value(all[k], k)}</dd>`).join("") + "</dl>";
  }
  function value(v, name) {
    if (v === null || typeof v !== "object") return esc(fmt(v));
    if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === "object" && !Array.isArray(x))) {
      const cols = [...new Set(v.flatMap((x) => Object.keys(x)))];
      return `<div class="scroll" tabindex="0" role="region" aria-label="${esc(name)}"><table><thead><tr>` +
        cols.map((c) => `<th scope="col">${esc(c)}</th>`).join("") + "</tr></thead><tbody>" +
        v.map((x) => "<tr>" + cols.map((c) => `<td>${esc(typeof x[c] === "object" ? JSON.stringify(x[c]) : fmt(x[c]))}</td>`).join("") + "</tr>").join("") +
        "</tbody></table></div>";
    }
    if (Array.isArray(v)) return esc(v.map(fmt).join(", "));
    return esc(Object.entries(v).map(([k, x]) => `${k}: ${typeof x === "object" && x !== null ? JSON.stringify(x) : fmt(x)}`).join(", "));
  }

  $("decisions").addEventListener("click", (ev) => {
    const row = ev.target.closest("tbody tr");
    if (!row || !row.dataset.seq) return;
    explain(Number(row.dataset.seq), row.dataset.session || "");
  });
})();
