// The memory view: what famulus remembers, shown and edited by its owner.
//
// Tabs for facts, observations, the profile, the learning review, dreams and the
// storage audit (#/memory/<tab>). The search box asks recall itself
// (POST /memory/recall/inspect), so the person sees exactly what the agent would
// get for that query, including what falls outside the prompt budget.
// Every piece of memory text is put in as plain text (h() makes text nodes);
// nothing from the server is ever parsed as HTML.

import { h, clear, when, confirmDialog } from "../dom.js";

const PAGE = 50;
const TABS = [
  ["facts", "Facts"],
  ["observations", "Observations"],
  ["profile", "Profile"],
  ["learning", "Learning"],
  ["dreams", "Dreams"],
  ["audit", "Audit"],
];
const RENDERERS = {
  facts: renderFacts,
  observations: renderObservations,
  profile: renderProfile,
  learning: renderLearning,
  dreams: renderDreams,
  audit: renderAudit,
};
const KIND_RE = /^[a-z_][a-z0-9_-]*$/;
const SOURCES = [
  ["", "anywhere"],
  ["chat", "chats"],
  ["manual", "added by hand"],
  ["automation", "automations"],
  ["init", "the /init scan"],
  ["mail", "mail"],
  ["calendar", "calendar"],
];

export const view = { name: "memory", title: "Memory", mount };

async function mount(root, ctx) {
  const state = { alive: true };
  const stats = h("p", { class: "mem-stats muted" });
  const results = h("div", { class: "mem-results", hidden: "" });
  const body = h("div", { class: "mem-body" });
  const env = { ctx, state, body, refreshStats: () => loadStats(ctx, state, stats) };
  env.search = searchBox(env, results);
  // Tabs switch in place (the search results stay); the address follows with
  // pushState, so Back returns to the previous tab through the shell's router.
  const show = (tab) => {
    for (const b of tabs.querySelectorAll(".mem-tab")) {
      const on = b.dataset.tab === tab;
      b.classList.toggle("active", on);
      if (on) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
    env.listFacts = null;
    return RENDERERS[tab](env);
  };
  const tabs = tabBar((tab) => {
    history.pushState(null, "", `#/memory/${tab}`);
    show(tab);
  });
  root.classList.add("mem-view");
  root.append(
    h("header", { class: "mem-head" }, h("h2", {}, "Memory"), stats),
    env.search.form,
    results,
    tabs,
    body,
  );
  env.refreshStats();
  await show(RENDERERS[ctx.params[0]] ? ctx.params[0] : "facts");
  return () => {
    state.alive = false;
  };
}

// -- shared pieces -------------------------------------------------------------

/** Runs an API action; an error becomes a toast, so one failed call never breaks the view. */
async function attempt(ctx, action) {
  try {
    return { ok: true, value: await action() };
  } catch (err) {
    ctx.toast(err && err.detail ? err.detail : String(err && err.message ? err.message : err), "error");
    return { ok: false };
  }
}

function tabBar(choose) {
  return h(
    "nav",
    { class: "mem-tabs", "aria-label": "Memory sections" },
    ...TABS.map(([key, label]) =>
      h(
        "button",
        { type: "button", class: "mem-tab", dataset: { tab: key }, on: { click: () => choose(key) } },
        label,
      ),
    ),
  );
}

async function loadStats(ctx, state, el) {
  const got = await attempt(ctx, () => ctx.api.get("/stats"));
  if (!got.ok || !state.alive) return;
  const s = got.value;
  el.textContent = [
    count(s.fact_count, "fact"),
    count(s.observation_count, "observation"),
    count(s.profile_count, "profile entry", "profile entries"),
    count(s.dream_count, "dream"),
  ].join(" · ");
}

function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** Appends children, skipping the null that marks "nothing to show here". */
function put(el, ...children) {
  el.append(...children.filter((c) => c !== null && c !== undefined));
}

function button(label, onClick, cls = "") {
  return h("button", { type: "button", class: cls, on: { click: onClick } }, label);
}

/** A button that is disabled while its (async) action runs, so a double click acts once. */
function actionButton(label, action, cls = "") {
  const el = button(
    label,
    async () => {
      el.disabled = true;
      try {
        await action();
      } finally {
        el.disabled = false;
      }
    },
    cls,
  );
  return el;
}

function meta(...parts) {
  return h("div", { class: "mem-meta muted" }, parts.filter(Boolean).join(" · "));
}

function badge(text, cls = "") {
  return h("span", { class: `badge ${cls}`.trim() }, text);
}

function empty(text) {
  return h("p", { class: "mem-empty muted" }, text);
}

/** "1–50 of 120" with Previous/Next; go(offset) loads another page, then the
 * list's top is brought into view (the buttons sit below a long list). */
function pager(total, offset, go, list) {
  if (total <= PAGE && offset === 0) return h("div", { class: "mem-pager" });
  const jump = async (to) => {
    await go(to);
    list.scrollIntoView({ block: "start" });
  };
  const prev = button("Previous", () => jump(Math.max(0, offset - PAGE)), "mem-prev");
  const next = button("Next", () => jump(offset + PAGE), "mem-next");
  prev.disabled = offset === 0;
  next.disabled = offset + PAGE >= total;
  const last = Math.min(total, offset + PAGE);
  return h(
    "div",
    { class: "mem-pager" },
    prev,
    h("span", { class: "muted" }, total ? `${offset + 1}–${last} of ${total}` : "none"),
    next,
  );
}

function textArea(value, name, rows = 3) {
  const el = h("textarea", { name, rows: String(rows) });
  el.value = value || "";
  return el;
}

function textInput(value, name, placeholder = "") {
  const el = h("input", { type: "text", name, placeholder });
  el.value = value || "";
  return el;
}

function checkbox(label, checked, onChange, name) {
  const box = h("input", { type: "checkbox", name, on: { change: () => onChange(box.checked) } });
  box.checked = checked;
  return h("label", { class: "mem-check" }, box, " ", label);
}

/** Checks a fact or profile kind like the server does, so the person learns it before sending. */
function kindError(kind) {
  if (!kind) return null;
  if (kind.length > 40 || !KIND_RE.test(kind)) {
    return "A kind is one lower-case word (letters, digits, _ or -), at most 40 characters.";
  }
  return null;
}

/** Swaps an item's content for an edit form; save(values) returns true when it worked. */
function editInPlace(item, fields, save, restore) {
  const inputs = fields.map(([label, el]) => h("label", { class: "mem-field" }, label, el));
  const form = h(
    "form",
    { class: "mem-edit" },
    ...inputs,
    h(
      "div",
      { class: "mem-actions" },
      h("button", { type: "submit", class: "primary" }, "Save"),
      button("Cancel", restore),
    ),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    try {
      if (await save()) restore();
    } finally {
      submit.disabled = false;
    }
  });
  form.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") restore();
    else if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) form.requestSubmit();
  });
  clear(item);
  item.append(form);
  fields[0][1].focus();
}

// -- recall search -------------------------------------------------------------

function searchBox(env, results) {
  const { ctx, state } = env;
  const query = h("input", {
    type: "search",
    name: "recall",
    placeholder: "Search memory as the agent would recall it…",
    "aria-label": "Search memory (recall)",
  });
  const form = h(
    "form",
    { class: "mem-search", role: "search" },
    query,
    h("button", { type: "submit" }, "Search"),
  );
  let last = "";
  const run = async (q) => {
    last = q;
    if (!q) {
      results.hidden = true;
      clear(results);
      return;
    }
    const got = await attempt(ctx, () =>
      ctx.api.post("/memory/recall/inspect", { query: q, limit: 20 }),
    );
    if (!got.ok || !state.alive || q !== last) return;
    showRecall(env, results, q, got.value, () => {
      query.value = "";
      run("");
    });
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    run(query.value.trim());
  });
  return { form, rerun: () => (last ? run(last) : undefined) };
}

function showRecall(env, results, q, found, close) {
  clear(results);
  results.hidden = false;
  const facts = found.facts.map((f) => factItem(env, f, recallNote(f)));
  const observations = found.observations.map((o) => observationItem(env, o, recallNote(o)));
  put(results,
    h(
      "div",
      { class: "mem-results-head" },
      h("h3", {}, `What recall gives the agent for “${q}”`),
      button("Close", close, "mem-close"),
    ),
    facts.length ? h("ul", { class: "mem-list mem-recall-facts" }, ...facts) : empty("No facts recalled."),
    observations.length
      ? h("ul", { class: "mem-list mem-recall-observations" }, h("li", { class: "mem-subhead" }, "Observations"), ...observations)
      : null,
    h(
      "details",
      { class: "mem-formatted" },
      h("summary", {}, "The memory text the agent's prompt gets"),
      h("pre", {}, found.formatted || "(nothing)"),
    ),
  );
}

function recallNote(row) {
  const bits = [`score ${row.score.toFixed(3)}`];
  if (row.cosine !== null && row.cosine !== undefined) bits.push(`cosine ${row.cosine.toFixed(2)}`);
  if (row.fts_rank) bits.push(`text #${row.fts_rank}`);
  if (row.vector_rank) bits.push(`vector #${row.vector_rank}`);
  return h(
    "div",
    { class: "mem-recall-note" },
    row.injected ? badge("in the prompt", "ok") : badge("left out (budget)", "warn"),
    " ",
    h("span", { class: "muted" }, bits.join(" · ")),
  );
}

// -- facts ---------------------------------------------------------------------

function factItem(env, fact, note = null) {
  const { ctx } = env;
  const li = h("li", { class: "mem-item mem-fact", dataset: { id: String(fact.id) } });
  const detail = h("div", { class: "mem-detail", hidden: "" });
  const render = () => {
    clear(li);
    const archived = fact.archived_at ? `archived ${when(fact.archived_at)}` : null;
    const used = fact.access_count ? `recalled ${fact.access_count}×` : null;
    const actions = fact.archived_at
      ? [button("Details", () => toggleFactDetail(env, fact, detail))]
      : [
          button("Details", () => toggleFactDetail(env, fact, detail)),
          button("Edit", edit, "mem-edit-btn"),
          actionButton("Delete", remove, "danger mem-delete-btn"),
        ];
    put(li,
      h("div", { class: "mem-text" }, fact.text),
      meta(fact.kind, fact.source_type, when(fact.updated_at || fact.created_at), used, archived),
      note,
      h("div", { class: "mem-actions" }, ...actions),
      detail,
    );
  };
  const edit = () => {
    const text = textArea(fact.text, "text");
    const kind = textInput(fact.kind, "kind", "fact");
    editInPlace(
      li,
      [
        ["Text", text],
        ["Kind", kind],
      ],
      async () => {
        const patch = {};
        if (text.value.trim() !== fact.text) patch.text = text.value.trim();
        if (kind.value.trim() && kind.value.trim() !== fact.kind) patch.kind = kind.value.trim();
        const bad = kindError(patch.kind);
        if (bad) return ctx.toast(bad, "error"), false;
        if (!Object.keys(patch).length) return true;
        const got = await attempt(ctx, () => ctx.api.patch(`/facts/${fact.id}`, patch));
        if (!got.ok) return false;
        fact = got.value.fact;
        ctx.toast("Fact saved.", "info");
        env.search.rerun();
        if (env.listFacts && note) env.listFacts();
        return true;
      },
      render,
    );
  };
  const remove = async () => {
    if (!(await confirmDialog(`Delete this fact for good? “${fact.text}”`, "Delete"))) return;
    const got = await attempt(ctx, () => ctx.api.del(`/facts/${fact.id}`));
    if (!got.ok) return;
    ctx.toast("Fact deleted.", "info");
    li.remove();
    env.refreshStats();
    env.search.rerun();
    if (env.listFacts) env.listFacts();
  };
  render();
  return li;
}

async function toggleFactDetail(env, fact, detail) {
  if (!detail.hidden) {
    detail.hidden = true;
    return;
  }
  const got = await attempt(env.ctx, () => env.ctx.api.get(`/facts/${fact.id}`));
  if (!got.ok) return;
  const { entities, linked_facts: linked } = got.value;
  const prov = got.value.fact.provenance || {};
  clear(detail);
  put(detail,
    entities.length
      ? h("p", {}, "Entities: ", entities.map((e) => `${e.name} (${e.type})`).join(", "))
      : null,
    linked.length
      ? h(
          "div",
          {},
          "Linked facts:",
          h("ul", {}, ...linked.map((l) => h("li", {}, `${l.text} — ${l.link_type}`))),
        )
      : null,
    prov.session_id ? h("p", {}, `From session ${prov.session_id}`) : null,
    got.value.fact.superseded_by ? h("p", {}, `Superseded by fact #${got.value.fact.superseded_by}`) : null,
    !entities.length && !linked.length && !prov.session_id ? h("p", { class: "muted" }, "No links or entities.") : null,
  );
  detail.hidden = false;
}

async function renderFacts(env) {
  const { ctx, state, body } = env;
  let offset = 0;
  let archived = false;
  const list = h("ul", { class: "mem-list mem-facts" });
  const pagerSlot = h("div");
  const text = textArea("", "text", 2);
  text.placeholder = "Something to remember, e.g. “My sister Ines lives in Porto”";
  const kind = textInput("", "kind", "kind (fact)");
  const add = h(
    "form",
    { class: "mem-add" },
    text,
    h("div", { class: "mem-add-row" }, kind, h("button", { type: "submit", class: "primary" }, "Remember")),
  );
  add.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fact = { text: text.value.trim() };
    if (!fact.text) return ctx.toast("Write the fact first.", "error");
    if (kind.value.trim()) fact.kind = kind.value.trim();
    const bad = kindError(fact.kind);
    if (bad) return ctx.toast(bad, "error");
    const got = await attempt(ctx, () => ctx.api.post("/facts", fact));
    if (!got.ok) return;
    text.value = "";
    kind.value = "";
    ctx.toast("Remembered.", "info");
    env.refreshStats();
    offset = 0;
    load();
  });
  add.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) add.requestSubmit();
  });
  const kindFilter = textInput("", "kind-filter", "any");
  kindFilter.classList.add("mem-kind-filter");
  const sourceFilter = h(
    "select",
    { name: "source-filter" },
    ...SOURCES.map(([value, label]) => h("option", { value }, label)),
  );
  const refilter = () => {
    offset = 0;
    load();
  };
  kindFilter.addEventListener("change", refilter);
  sourceFilter.addEventListener("change", refilter);
  const load = async () => {
    const got = await attempt(ctx, () =>
      ctx.api.get("/facts", {
        limit: PAGE,
        offset,
        archived: archived ? "true" : "false",
        kind: kindFilter.value.trim(),
        source_type: sourceFilter.value,
      }),
    );
    if (!got.ok || !state.alive) return;
    const { facts, total } = got.value;
    if (!facts.length && offset > 0) {
      offset = Math.max(0, offset - PAGE);
      return load();
    }
    clear(list);
    list.append(...facts.map((f) => factItem(env, f)));
    if (!facts.length) list.append(empty(archived ? "No superseded facts here." : "No facts here yet."));
    clear(pagerSlot);
    pagerSlot.append(pager(total, offset, (o) => ((offset = o), load()), list));
  };
  env.listFacts = load;
  clear(body);
  body.append(
    add,
    importBox(env, () => ((offset = 0), load())),
    h(
      "div",
      { class: "mem-filters" },
      h("label", {}, "Kind ", kindFilter),
      h("label", {}, "From ", sourceFilter),
      checkbox("Show superseded facts", false, (on) => ((archived = on), (offset = 0), load()), "archived"),
    ),
    list,
    pagerSlot,
  );
  await load();
}

/** Many facts at once, one a line (POST /facts/import skips texts already held). */
function importBox(env, reload) {
  const { ctx } = env;
  const lines = textArea("", "import", 6);
  lines.placeholder = "One fact a line";
  const form = h(
    "form",
    { class: "mem-add" },
    lines,
    h("div", { class: "mem-add-row" }, h("button", { type: "submit" }, "Import")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const facts = lines.value
      .split("\n")
      .map((t) => t.trim())
      .filter(Boolean)
      .map((text) => ({ text }));
    if (!facts.length) return ctx.toast("Write one fact a line first.", "error");
    const got = await attempt(ctx, () => ctx.api.post("/facts/import", { facts }));
    if (!got.ok) return;
    lines.value = "";
    const { imported, skipped } = got.value;
    ctx.toast(`Imported ${imported}` + (skipped ? `, skipped ${skipped} already known.` : "."), "info");
    env.refreshStats();
    reload();
  });
  return h("details", { class: "mem-import" }, h("summary", {}, "Import many facts"), form);
}

// -- observations --------------------------------------------------------------

function observationItem(env, obs, note = null) {
  const { ctx } = env;
  const li = h("li", { class: "mem-item mem-observation", dataset: { id: String(obs.id) } });
  const detail = h("div", { class: "mem-detail", hidden: "" });
  const showFacts = async () => {
    if (!detail.hidden) return void (detail.hidden = true);
    const got = await attempt(ctx, () => ctx.api.get(`/observations/${obs.id}`));
    if (!got.ok) return;
    clear(detail);
    detail.append(factList(got.value.supporting_facts, "No supporting facts left."));
    detail.hidden = false;
  };
  const render = () => {
    clear(li);
    put(li,
      h("div", { class: "mem-text" }, obs.summary),
      meta(`from ${obs.evidence_count} facts`, when(obs.updated_at || obs.created_at)),
      note,
      h(
        "div",
        { class: "mem-actions" },
        button("Facts", showFacts),
        button("Edit", edit, "mem-edit-btn"),
        actionButton("Delete", remove, "danger mem-delete-btn"),
      ),
      detail,
    );
  };
  const edit = () => {
    const summary = textArea(obs.summary, "summary");
    editInPlace(
      li,
      [["Summary", summary]],
      async () => {
        const text = summary.value.trim();
        if (text === obs.summary) return true;
        const got = await attempt(ctx, () =>
          ctx.api.patch(`/observations/${obs.id}`, { summary: text }),
        );
        if (!got.ok) return false;
        obs = got.value.observation;
        ctx.toast("Observation saved.", "info");
        return true;
      },
      render,
    );
  };
  const remove = async () => {
    if (!(await confirmDialog(`Delete this observation? “${obs.summary}”`, "Delete"))) return;
    const got = await attempt(ctx, () => ctx.api.del(`/observations/${obs.id}`));
    if (!got.ok) return;
    ctx.toast("Observation deleted.", "info");
    li.remove();
    env.refreshStats();
  };
  render();
  return li;
}

/** Facts shown read-only (the sources behind an observation, entry or dream). */
function factList(facts, none) {
  if (!facts.length) return empty(none);
  return h(
    "ul",
    { class: "mem-sources" },
    ...facts.map((f) => h("li", {}, f.text, " ", h("span", { class: "muted" }, `(${f.kind})`))),
  );
}

async function renderObservations(env) {
  await pagedList(env, {
    path: "/observations",
    key: "observations",
    cls: "mem-observations",
    none: "No observations yet. They are drawn from several facts during memory upkeep.",
    item: (o) => observationItem(env, o),
  });
}

/** A paged list of one kind of row; returns its loader. */
async function pagedList(env, spec, ...before) {
  const { ctx, state, body } = env;
  let offset = 0;
  const list = h("ul", { class: `mem-list ${spec.cls}` });
  const pagerSlot = h("div");
  const load = async () => {
    const got = await attempt(ctx, () =>
      ctx.api.get(spec.path, { limit: PAGE, offset, ...(spec.query ? spec.query() : {}) }),
    );
    if (!got.ok || !state.alive) return;
    const rows = got.value[spec.key];
    if (!rows.length && offset > 0) {
      offset = Math.max(0, offset - PAGE);
      return load();
    }
    clear(list);
    list.append(...rows.map(spec.item));
    if (!rows.length) list.append(empty(spec.none));
    clear(pagerSlot);
    pagerSlot.append(pager(got.value.total, offset, (o) => ((offset = o), load()), list));
  };
  clear(body);
  body.append(...before, list, pagerSlot);
  await load();
  return {
    load,
    reset: () => {
      offset = 0;
      return load();
    },
  };
}

// -- profile -------------------------------------------------------------------

function profileItem(env, entry, reload) {
  const { ctx } = env;
  const li = h("li", { class: "mem-item mem-entry", dataset: { id: String(entry.id) } });
  const detail = h("div", { class: "mem-detail", hidden: "" });
  const sources = async () => {
    if (!detail.hidden) return void (detail.hidden = true);
    const got = await attempt(ctx, () => ctx.api.get(`/memory/profile/${entry.id}`));
    if (!got.ok) return;
    clear(detail);
    put(detail,
      factList(got.value.source_facts, "No source facts."),
      got.value.source_observations.length
        ? h("ul", { class: "mem-sources" }, ...got.value.source_observations.map((o) => h("li", {}, o.summary)))
        : null,
    );
    detail.hidden = false;
  };
  const render = () => {
    clear(li);
    const actions = [button("Sources", sources)];
    if (!entry.archived_at) {
      actions.push(button("Edit", edit, "mem-edit-btn"), actionButton("Archive", remove, "danger mem-delete-btn"));
    }
    put(li,
      h("div", { class: "mem-text" }, h("strong", {}, entry.kind), ": ", entry.summary),
      meta(
        `confidence ${Math.round(entry.confidence * 100)}%`,
        when(entry.updated_at || entry.created_at),
        entry.archived_at ? `archived ${when(entry.archived_at)}` : null,
      ),
      h("div", { class: "mem-actions" }, ...actions),
      detail,
    );
  };
  const edit = () => {
    const kind = textInput(entry.kind, "kind");
    const summary = textArea(entry.summary, "summary");
    editInPlace(
      li,
      [
        ["Summary", summary],
        ["Kind", kind],
      ],
      async () => {
        const patch = {};
        if (summary.value.trim() !== entry.summary) patch.summary = summary.value.trim();
        if (kind.value.trim() !== entry.kind) patch.kind = kind.value.trim();
        if (!Object.keys(patch).length) return true;
        const got = await attempt(ctx, () => ctx.api.patch(`/memory/profile/${entry.id}`, patch));
        if (!got.ok) return false;
        entry = got.value.entry;
        ctx.toast("Profile entry saved.", "info");
        return true;
      },
      render,
    );
  };
  const remove = async () => {
    if (!(await confirmDialog(`Archive this profile entry? The agent stops seeing it. “${entry.summary}”`, "Archive"))) return;
    const got = await attempt(ctx, () => ctx.api.del(`/memory/profile/${entry.id}`));
    if (!got.ok) return;
    ctx.toast("Profile entry archived.", "info");
    env.refreshStats();
    reload();
  };
  render();
  return li;
}

async function renderProfile(env) {
  const { ctx, state, body } = env;
  let archived = false;
  const list = h("ul", { class: "mem-list mem-profile" });
  const kind = textInput("", "kind", "kind, e.g. name");
  const summary = textInput("", "summary", "e.g. Prefers to be called Robert");
  const add = h(
    "form",
    { class: "mem-add-row mem-profile-add" },
    kind,
    summary,
    h("button", { type: "submit", class: "primary" }, "Add"),
  );
  const load = async () => {
    const got = await attempt(ctx, () =>
      ctx.api.get("/memory/profile", archived ? { archived: "true" } : undefined),
    );
    if (!got.ok || !state.alive) return;
    clear(list);
    list.append(...got.value.entries.map((e) => profileItem(env, e, load)));
    if (!got.value.entries.length) list.append(empty("The profile is empty."));
  };
  add.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const entry = { kind: kind.value.trim(), summary: summary.value.trim() };
    if (!entry.kind || !entry.summary) return ctx.toast("Give the entry a kind and a summary.", "error");
    const got = await attempt(ctx, () => ctx.api.post("/memory/profile", entry));
    if (!got.ok) return;
    kind.value = "";
    summary.value = "";
    ctx.toast("Profile entry added.", "info");
    env.refreshStats();
    load();
  });
  clear(body);
  body.append(
    h("p", { class: "muted" }, "The profile is always in the agent's prompt; keep it short."),
    add,
    h("div", { class: "mem-filters" }, checkbox("Show archived entries", false, (on) => ((archived = on), load()), "archived")),
    list,
  );
  await load();
}

// -- learning review -----------------------------------------------------------

const NEXT_STEPS = {
  proposed: [
    ["Approve", "approved", "primary mem-approve"],
    ["Reject", "rejected", "mem-reject"],
  ],
  approved: [["Apply again", "applied", "primary mem-apply"]],
  applied: [["Revert", "reverted", "danger mem-revert"]],
  rejected: [],
  reverted: [],
};

function candidateItem(env, cand) {
  const { ctx } = env;
  const li = h("li", { class: "mem-item mem-candidate", dataset: { id: String(cand.id), status: cand.status } });
  const render = () => {
    clear(li);
    li.dataset.status = cand.status;
    const target = cand.change_type === "directive" ? "directives" : `profile (${cand.target_key})`;
    put(li,
      h("div", { class: "mem-text" }, cand.proposal),
      cand.rationale ? h("div", { class: "mem-rationale" }, "Why: ", cand.rationale) : null,
      h(
        "div",
        { class: "mem-meta muted" },
        badge(cand.status, `status-${cand.status}`),
        ` changes ${target} · from ${cand.evidence_event_ids.length} event(s) · ${when(cand.created_at)}`,
        cand.applied_at ? ` · applied ${when(cand.applied_at)}` : "",
        cand.reverted_at ? ` · reverted ${when(cand.reverted_at)}` : "",
      ),
      h(
        "div",
        { class: "mem-actions" },
        ...NEXT_STEPS[cand.status].map(([label, status, cls]) =>
          actionButton(label, () => move(status), cls),
        ),
      ),
    );
  };
  const move = async (status) => {
    if (status === "reverted" && !(await confirmDialog("Undo this change to how the agent behaves?", "Revert"))) return;
    const got = await attempt(ctx, () =>
      ctx.api.patch(`/memory/learning/candidates/${cand.id}/status`, { status }),
    );
    if (!got.ok) return;
    cand = got.value.candidate;
    ctx.toast(`Candidate ${cand.status}.`, "info");
    env.refreshStats();
    render();
  };
  render();
  return li;
}

function eventItem(ev) {
  return h(
    "li",
    { class: "mem-item mem-event" },
    h("div", { class: "mem-text" }, ev.summary),
    meta(ev.kind.replace("_", " "), ev.session_id ? `session ${ev.session_id}` : null, when(ev.created_at)),
  );
}

async function renderLearning(env) {
  const { ctx } = env;
  let status = "proposed";
  const select = h(
    "select",
    { name: "status", "aria-label": "Show candidates" },
    ...["proposed", "approved", "applied", "rejected", "reverted", "all"].map((s) =>
      h("option", { value: s }, s),
    ),
  );
  select.value = status;
  const events = h("ul", { class: "mem-list mem-events" });
  const eventsBox = h(
    "details",
    { class: "mem-events-box" },
    h("summary", {}, "The feedback learning draws on"),
    events,
  );
  let candidates = null;
  eventsBox.addEventListener("toggle", async () => {
    if (!eventsBox.open) return;
    const got = await attempt(ctx, () => ctx.api.get("/memory/learning/events", { limit: PAGE }));
    if (!got.ok) return;
    clear(events);
    events.append(...got.value.events.map(eventItem));
    if (!got.value.events.length) events.append(empty("No feedback recorded yet."));
  });
  const propose = actionButton(
    "Propose from feedback now",
    async () => {
      const got = await attempt(ctx, () => ctx.api.post("/memory/learning/propose"));
      if (!got.ok) return;
      const n = got.value.created_candidates.length;
      ctx.toast(n ? `${n} new proposal(s).` : "Nothing new to propose.", "info");
      if (candidates) candidates.reset();
    },
    "mem-propose",
  );
  select.addEventListener("change", () => {
    status = select.value;
    if (candidates) candidates.reset();
  });
  candidates = await pagedList(
    env,
    {
      path: "/memory/learning/candidates",
      key: "candidates",
      cls: "mem-candidates",
      none: "No candidates here. Proposals come from corrections, denied approvals, failed tools and automation outcomes.",
      query: () => (status === "all" ? {} : { status }),
      item: (c) => candidateItem(env, c),
    },
    h(
      "p",
      { class: "muted" },
      "Changes the agent proposes to how it behaves. Approving applies one at once; reverting undoes exactly that change.",
    ),
    h("div", { class: "mem-filters" }, h("label", {}, "Show ", select), propose),
    eventsBox,
  );
}

// -- dreams --------------------------------------------------------------------

function dreamItem(env, dream) {
  const { ctx } = env;
  const li = h("li", { class: "mem-item mem-dream", dataset: { id: String(dream.id) } });
  const detail = h("div", { class: "mem-detail", hidden: "" });
  const sources = async () => {
    if (!detail.hidden) return void (detail.hidden = true);
    const got = await attempt(ctx, () => ctx.api.get(`/dreams/${dream.id}`));
    if (!got.ok) return;
    clear(detail);
    detail.append(factList(got.value.source_facts, "Its facts are gone."));
    detail.hidden = false;
  };
  const remove = async () => {
    if (!(await confirmDialog(`Delete this dream? “${dream.insight}”`, "Delete"))) return;
    const got = await attempt(ctx, () => ctx.api.del(`/dreams/${dream.id}`));
    if (!got.ok) return;
    li.remove();
    env.refreshStats();
  };
  put(li,
    h("div", { class: "mem-text" }, dream.insight),
    meta(`bridge: ${dream.bridge}`, when(dream.created_at)),
    h(
      "div",
      { class: "mem-actions" },
      button("Facts", sources),
      actionButton("Delete", remove, "danger mem-delete-btn"),
    ),
    detail,
  );
  return li;
}

async function renderDreams(env) {
  await pagedList(env, {
    path: "/dreams",
    key: "dreams",
    cls: "mem-dreams",
    none: "No dreams. They are connections between distant facts, made during upkeep when dreams are on in the settings.",
    item: (d) => dreamItem(env, d),
  });
}

// -- audit ---------------------------------------------------------------------

const DRIFT_ROWS = [
  ["total", "Rows"],
  ["without_embedding", "Without an embedding"],
  ["stale_embedding", "Embedding older than the text"],
  ["orphan_embedding", "Embeddings of deleted rows"],
  ["fts_missing", "Missing from full-text search"],
  ["fts_orphan", "Full-text rows of deleted rows"],
  ["index_missing", "Missing from the vector index"],
  ["index_orphan", "Vector index rows of deleted rows"],
];

function progress(label, p) {
  const text =
    p.status === "idle"
      ? "idle"
      : `${p.status}: ${p.done} of ${p.total}` +
        (p.embedding_model ? ` (${p.embedding_model})` : "") +
        (p.error ? ` — ${p.error}` : "");
  return h("p", { class: `mem-progress status-${p.status}` }, `${label}: ${text}`);
}

function auditTable(audit) {
  const cell = (side, key) => {
    const n = audit[side][key];
    const ids = audit[side][`${key}_ids`];
    const td = h("td", { class: key !== "total" && n ? "warn" : "" }, String(n));
    if (ids && ids.length) td.title = `ids: ${ids.join(", ")}`;
    return td;
  };
  return h(
    "table",
    { class: "mem-audit-table" },
    h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "Facts"), h("th", {}, "Observations"))),
    h(
      "tbody",
      {},
      ...DRIFT_ROWS.map(([key, label]) =>
        h("tr", {}, h("th", { scope: "row" }, label), cell("facts", key), cell("observations", key)),
      ),
      h(
        "tr",
        {},
        h("th", { scope: "row" }, "Full-text index consistent"),
        h("td", {}, audit.facts.fts_consistent ? "yes" : "no"),
        h("td", {}, audit.observations.fts_consistent ? "yes" : "no"),
      ),
    ),
  );
}

async function renderAudit(env) {
  const { ctx, state, body } = env;
  const out = h("div", { class: "mem-audit" });
  const load = async () => {
    const got = await attempt(ctx, () => ctx.api.get("/memory/audit"));
    if (!got.ok || !state.alive) return;
    const a = got.value;
    clear(out);
    out.append(
      h(
        "p",
        { class: `mem-audit-verdict ${a.ok ? "ok" : "warn"}` },
        a.ok ? "Memory storage is healthy." : "Memory storage needs attention (see below).",
      ),
      h("p", {}, `Embedding model: ${a.embedding_model}`),
      auditTable(a),
      h(
        "p",
        {},
        `Orphan links: ${a.orphan_links} between facts, ${a.orphan_entity_links} to entities, ` +
          `${a.orphan_observation_links} to observations.`,
      ),
      progress("Re-index", a.reindex),
      progress("Background embedding", a.backfill),
    );
  };
  const upkeep = actionButton(
    "Run upkeep now",
    async () => {
      const got = await attempt(ctx, () => ctx.api.post("/memory/maintain"));
      if (!got.ok) return;
      const r = got.value;
      const made = [
        count(r.observations.length, "observation"),
        count(r.profile.length, "profile entry", "profile entries"),
        count(r.dreams.length, "dream"),
      ];
      ctx.toast(`Upkeep done: ${made.join(", ")}.`, "info");
      env.refreshStats();
      load();
    },
    "mem-maintain",
  );
  const access = h("ul", { class: "mem-list mem-access" });
  const accessBox = h(
    "details",
    { class: "mem-access-box" },
    h("summary", {}, "What recall gave the agent in recent chats"),
    access,
  );
  accessBox.addEventListener("toggle", async () => {
    if (!accessBox.open) return;
    const got = await attempt(ctx, () => ctx.api.get("/memory/access", { limit: 100 }));
    if (!got.ok) return;
    clear(access);
    access.append(...got.value.events.map(accessItem));
    if (!got.value.events.length) access.append(empty("Nothing recalled in a chat yet."));
  });
  const forget = actionButton(
    "Forget everything…",
    async () => {
      const sure = await confirmDialog(
        "Delete every fact, observation, profile entry, dream and learning record? This cannot be undone.",
        "Forget everything",
      );
      if (!sure) return;
      const got = await attempt(ctx, () => ctx.api.post("/memory/clear"));
      if (!got.ok) return;
      ctx.toast(`Memory cleared: ${got.value.deleted.facts} facts deleted.`, "info");
      env.refreshStats();
      load();
    },
    "danger mem-clear",
  );
  clear(body);
  body.append(
    h("div", { class: "mem-filters" }, actionButton("Refresh", load), upkeep),
    out,
    accessBox,
    h("div", { class: "mem-danger" }, forget),
  );
  await load();
}

/** One access record: a fact or observation recall found, put in the prompt, or left out. */
function accessItem(ev) {
  const verb = { retrieved: "found", injected: "put in the prompt", omitted: "left out" }[ev.action] || ev.action;
  return h(
    "li",
    { class: "mem-item mem-access-item" },
    h("div", {}, `${ev.owner_type} #${ev.owner_id} ${verb}`),
    meta(
      `for “${ev.query}”`,
      ev.score !== null ? `score ${ev.score.toFixed(3)}` : null,
      ev.session_id ? `session ${ev.session_id}` : null,
      when(ev.created_at),
    ),
  );
}
