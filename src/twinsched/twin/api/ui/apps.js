// The applications page: reads /api/v1/apps and one application's revisions, pods, usage.
"use strict";
(() => {
  const API = "/api/v1/apps";
  let chosen = null;  // [namespace, name]

  function cell(row, text, header) {
    const td = document.createElement(header ? "th" : "td");
    if (header) td.scope = "row";
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function fill(id, rows, make) {
    const body = document.querySelector(`#${id} tbody`);
    body.replaceChildren(...rows.map((r) => { const tr = document.createElement("tr"); make(tr, r); return tr; }));
  }

  async function json(url) {
    const answer = await fetch(url, { headers: { Accept: "application/json" } });
    if (!answer.ok) throw new Error(`${url}: ${answer.status}`);
    return answer.json();
  }

  function when(t) { return new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19); }

  function showApps(apps) {
    fill("apps-table", apps, (tr, a) => {
      const th = cell(tr, "", true);
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = `${a.namespace}/${a.name}`;
      button.addEventListener("click", () => { chosen = [a.namespace, a.name]; refresh(); });
      th.appendChild(button);
      cell(tr, String(a.revision));
      cell(tr, a.status);
      cell(tr, `${a.running} / ${a.wanted}`);
      cell(tr, String(a.updated));
      cell(tr, String(a.pending));
      cell(tr, a.templates.join(", "));
    });
    if (chosen === null && apps.length) chosen = [apps[0].namespace, apps[0].name];
  }

  async function showApp() {
    const base = `${API}/${chosen[0]}/${chosen[1]}`;
    const [revisions, pods, usage] = await Promise.all(
      [json(`${base}/revisions`), json(`${base}/pods`), json(`${base}/usage`)]);
    document.getElementById("app-empty").textContent = `${chosen[0]}/${chosen[1]}`;
    fill("revisions-table", revisions.slice().reverse(), (tr, r) => {
      cell(tr, String(r.revision), true); cell(tr, r.action); cell(tr, r.author);
      cell(tr, when(r.at)); cell(tr, r.detail);
    });
    fill("pods-table", pods, (tr, p) => {
      cell(tr, p.pod, true); cell(tr, p.template); cell(tr, p.phase); cell(tr, p.node || "");
      cell(tr, p.current ? "yes" : "no");
      cell(tr, p.events.map((e) => `${e.version}: ${e.kind}${e.node ? " on " + e.node : ""}`).join("; "));
    });
    const t = usage.total;
    document.getElementById("usage-total").textContent =
      `${t.pods} running pods hold ${t.cpu_milli} milli-CPU, ${t.memory_mib} MiB, ${t.gpu_milli} milli-GPU`;
    fill("usage-table", usage.nodes, (tr, n) => {
      cell(tr, n.node, true); cell(tr, String(n.pods)); cell(tr, String(n.cpu_milli));
      cell(tr, String(n.memory_mib)); cell(tr, String(n.gpu_milli));
      cell(tr, Object.entries(n.metrics).map(([k, v]) => `${k}=${Number(v).toPrecision(3)}`).join(", "));
    });
  }

  async function refresh() {
    const status = document.getElementById("apps-status");
    try {
      showApps(await json(API));
      if (chosen !== null) await showApp();
      status.textContent = `updated ${new Date().toLocaleTimeString()}`;
      status.className = "pill ready";
    } catch (error) {
      status.textContent = String(error.message || error);
      status.className = "pill down";
    }
  }

  refresh();
  setInterval(refresh, 2000);
})();
