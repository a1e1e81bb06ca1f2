// The usage view: what the model requests cost, per day (bars) and per model
// (a table), over the last 30 days, from GET /usage.
//
// Bars are plain divs whose width is set through the CSSOM (el.style), which
// the page's Content-Security-Policy allows (it forbids style attributes in
// markup, not script-set styles); no chart library is needed. A cost of null
// means no price was known for those requests (a custom model, a subscription):
// it is shown as "unknown", never as $0.

import { h, clear } from "../dom.js";

export const view = { name: "usage", title: "Usage", mount };

async function mount(root, ctx) {
  const state = { alive: true };
  const days = h("div", { class: "usage-days" });
  const models = h("div", { class: "usage-models" });
  const total = h("p", { class: "usage-total muted" }, "Loading…");
  root.classList.add("usage-view");
  root.append(
    h("header", { class: "usage-head" }, h("h2", {}, "Usage")),
    total,
    h("h3", {}, "Cost per day"),
    days,
    h("h3", {}, "By model"),
    models,
  );
  let byDay;
  let byModel;
  try {
    [byDay, byModel] = await Promise.all([
      ctx.api.get("/usage", { group_by: "day" }),
      ctx.api.get("/usage", { group_by: "model" }),
    ]);
  } catch (err) {
    ctx.toast(err && err.detail ? err.detail : String(err), "error");
    return;
  }
  if (!state.alive) return;
  const t = byDay.total;
  clear(total).append(
    `Last 30 days: ${money(t.cost)} over ${t.calls} model requests, ` +
      `${t.input_tokens.toLocaleString()} tokens in, ${t.output_tokens.toLocaleString()} out.`,
  );
  days.append(dayBars(byDay.groups));
  models.append(modelTable(byModel.groups));
  return () => {
    state.alive = false;
  };
}

function money(cost) {
  return cost === null || cost === undefined ? "unknown" : `$${cost.toFixed(cost < 0.01 && cost > 0 ? 4 : 2)}`;
}

function dayBars(groups) {
  if (!groups.length) return h("p", { class: "muted" }, "No model requests in this period.");
  const top = Math.max(...groups.map((g) => g.cost || 0));
  const list = h("ol", { class: "usage-bars" });
  for (const g of groups) {
    const bar = h("span", { class: "usage-bar" });
    bar.style.width = `${top > 0 ? Math.max(((g.cost || 0) / top) * 100, 1) : 1}%`;
    list.append(
      h(
        "li",
        { class: "usage-bar-row", title: `${g.calls} requests` },
        h("span", { class: "usage-bar-day" }, g.key),
        h("span", { class: "usage-bar-track" }, bar),
        h("span", { class: "usage-bar-cost" }, money(g.cost)),
      ),
    );
  }
  return list;
}

function modelTable(groups) {
  if (!groups.length) return h("p", { class: "muted" }, "No model requests in this period.");
  const head = h(
    "tr",
    {},
    ...["Model", "Requests", "Input", "Output", "Cache read", "Cost"].map((t) => h("th", {}, t)),
  );
  const rows = groups.map((g) =>
    h(
      "tr",
      {},
      h("td", {}, g.key),
      h("td", {}, String(g.calls)),
      h("td", {}, g.input_tokens.toLocaleString()),
      h("td", {}, g.output_tokens.toLocaleString()),
      h("td", {}, g.cache_read_tokens.toLocaleString()),
      h("td", {}, money(g.cost)),
    ),
  );
  return h("table", { class: "usage-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}
