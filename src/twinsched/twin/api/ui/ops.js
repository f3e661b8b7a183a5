// The operator's part of /ui: the headline figures per tier (the frame's "summary", the same
// object GET /api/v1/summary answers), the pods that cannot be placed with their reasons, the
// links between tiers as text, and how fresh the state is: seconds since the state last
// changed (the status events' changed_at, on the server's clock), never since the last event,
// so a feed that died shows "stale" while the stream itself stays up. ?stale=S sets the
// threshold (default 60 s).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const param = Number(new URLSearchParams(location.search).get("stale"));
  const STALE_S = param > 0 ? param : 60, LOST_S = 40;
  const fresh = { offset: 0, changedAt: null, statusAt: 0, past: false, lost: false };
  const pct = (share) => share.pct.toFixed(2);
  const kilo = (v) => (v / 1000).toFixed(2);

  function cell(value, text, figure) {
    return `<td data-value="${value}" data-figure="${figure}">${text}</td>`;
  }
  function row(t, total) {
    const head = total ? `<th scope="row">All tiers</th>` : `<th scope="row">${esc(t.id)}</th>`;
    return `<tr data-tier="${esc(t.id)}"${total ? ' class="total"' : ""}>${head}` +
      cell(t.nodes, `${t.up} / ${t.nodes}`, "nodes") +
      cell(t.cpu.pct, pct(t.cpu), "cpu") + cell(t.memory.pct, pct(t.memory), "memory") +
      cell(t.gpu.pct, pct(t.gpu), "gpu") + cell(t.power_w, kilo(t.power_w), "power") +
      cell(t.carbon_g_per_h, kilo(t.carbon_g_per_h), "carbon") + "</tr>";
  }
  function render(frame) {
    const s = frame.summary;
    if (!s) return;
    const key = JSON.stringify([s.tiers, s.total, s.pending, s.unschedulable.total, s.unschedulable.reasons]);
    if ($("headline").dataset.key !== key) {
      $("headline").dataset.key = key;
      $("headline").tBodies[0].innerHTML = s.tiers.map((t) => row(t, false)).join("") + row(s.total, true);
      $("pending-total").textContent = s.pending;
      $("unschedulable-total").textContent = s.unschedulable.total;
      const reasons = Object.entries(s.unschedulable.reasons);
      $("unschedulable-reasons").innerHTML = reasons.length
        ? reasons.map(([r, n]) => `<li data-reason="${esc(r)}"><b>${n}</b> ${esc(r)}</li>`).join("")
        : "<li>none</li>";
      const reported = s.total.power_reported;
      $("power-source").textContent = `Power: ${reported} of ${s.total.nodes} nodes report power_w, ` +
        `the others from their idle and peak watts; carbon at hour ${s.hour} of the twin's day.`;
    }
    renderUnschedulable(s.unschedulable);
    renderLinks(frame.links);
    const session = frame.session;
    $("session-line").textContent = session
      ? `session ${session.id} (${session.source}, ${session.timebase} time)${session.live ? "" : ", ended"}`
      : "no session yet";
  }
  function renderUnschedulable(u) {
    const body = $("unschedulable").tBodies[0], key = JSON.stringify(u.pods);
    if (body.dataset.key === key) return;
    body.dataset.key = key;
    $("unschedulable-shown").textContent = `(${u.pods.length} of ${u.total})`;
    body.innerHTML = u.pods.map((p) =>
      `<tr data-pod="${esc(p.id)}"><td>${esc(p.id)}</td><td>${esc(p.job)}</td><td>${esc(p.phase)}</td>` +
      `<td class="reason">${esc(p.reason)}</td><td>${p.cpu_milli}</td><td>${p.memory_mib}</td>` +
      `<td>${p.gpu_count ? `${p.gpu_count} × ${p.gpu_milli}m` : "0"}</td></tr>`).join("");
  }
  function renderLinks(links) {
    const list = $("links"), key = JSON.stringify(links);
    if (list.dataset.key === key) return;
    list.dataset.key = key;
    const seen = new Set(), between = links.filter(([a, b]) => {  // as the map: once a pair
      const pair = [a, b].sort().join("\u0000");
      if (a === b || seen.has(pair)) return false;
      seen.add(pair);
      return true;
    });
    list.innerHTML = between.length
      ? between.map(([a, b, ms, mbps]) => `<li>${esc(a)} ↔ ${esc(b)}: ${ms} ms, ${mbps} Mbit/s</li>`).join("")
      : "<li>no links between tiers</li>";
  }

  // -- freshness --------------------------------------------------------------------------------
  function status(st, past) {
    fresh.offset = st.now - Date.now() / 1000;
    fresh.changedAt = st.changed_at;
    fresh.statusAt = Date.now();
    fresh.past = past;
    fresh.lost = false;
    const h = st.health, pill = $("health");
    pill.textContent = h.ready ? "ready" : "not ready: " + h.problem;
    pill.className = "pill " + (h.ready ? "ready" : "down");
    $("pending-batches").textContent = h.pending_batches;
    tick();
  }
  function lost() {
    fresh.lost = true;
    $("health").textContent = "reconnecting";
    $("health").className = "pill down";
    tick();
  }
  function tick() {
    const pill = $("freshness");
    if (fresh.changedAt === null) return;
    const age = Math.max(0, Date.now() / 1000 + fresh.offset - fresh.changedAt);
    $("age").textContent = `${age.toFixed(0)} s ago`;
    let text = "live", cls = "ready";
    if (fresh.past) { text = "past session"; cls = ""; }
    else if (fresh.lost || Date.now() - fresh.statusAt > LOST_S * 1000) { text = "no connection"; cls = "down"; }
    else if (age >= STALE_S) { text = `stale: no state change for ${age.toFixed(0)} s`; cls = "stale"; }
    if (pill.textContent !== text) pill.textContent = text;
    pill.className = "pill " + cls;
    pill.dataset.age = age.toFixed(1);
  }
  setInterval(tick, 1000);
  window.twinOps = { render, status, lost, staleS: STALE_S };
})();
