// The settings view: model providers (a key, or the openai-codex sign-in that
// opens the provider's page and polls until connected), custom models, the four
// model roles (chat, research, memory; the embedding model with its re-index
// progress, followed on GET /memory/events), integrations, services, the Telegram chats allowed to talk to the
// agent (pairing requests to approve or deny), notifiers (with Test) and the
// directives.
// Each section loads and fails on its own, so one broken endpoint leaves the
// rest usable.
import { h, clear, when, confirmDialog } from "../dom.js";

export const view = { name: "settings", title: "Settings", mount };

const POLL_MS = 1500;
const MAX_DIRECTIVES = 20000;
const ROLES = [
  ["chat_model", "Chat", "Answers in chat and runs automations."],
  ["research_model", "Research", "The research sub-agent; falls back to the chat model."],
  ["memory_model", "Memory", "Extracts and maintains memory; falls back to the chat model."],
];
const WEB_MODES = [
  ["auto", "Automatic (Exa when connected, else keyless)"],
  ["exa", "Exa only"],
  ["ddgs", "Keyless search only"],
  ["none", "No web tools"],
];

function errText(err) {
  return (err && (err.detail || err.message)) || String(err);
}

function input(attrs, value) {
  const el = h("input", attrs);
  if (value !== undefined && value !== null) el.value = String(value);
  return el;
}

function checkbox(checked, attrs = {}) {
  const el = h("input", { type: "checkbox", ...attrs });
  el.checked = Boolean(checked);
  return el;
}

function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", { class: "field-label" }, label), control,
    hint ? h("span", { class: "field-hint" }, hint) : null);
}

function status(connected, text) {
  return h("span", { class: `badge ${connected ? "status-ok" : "status-muted"}` },
    text || (connected ? "connected" : "not connected"));
}

/** A path segment-safe model id: keeps "/" (the API takes ids with slashes). */
function idPath(id) {
  return id.split("/").map(encodeURIComponent).join("/");
}

/**
 * A settings section with a body that `load` fills; load errors are shown in
 * the section itself. Returns {el, reload}.
 */
function section(key, title, intro, load) {
  const body = h("div", { class: "settings-body" });
  const el = h("section", { class: `settings-section card settings-${key}`, id: `settings-${key}` },
    h("h3", {}, title), intro ? h("p", { class: "muted" }, intro) : null, body);
  async function reload() {
    try {
      const nodes = await load();
      clear(body);
      body.append(...nodes.filter(Boolean));
    } catch (err) {
      clear(body);
      body.append(h("p", { class: "error" }, `Could not load: ${errText(err)}`));
    }
  }
  return { el, reload };
}

/** Runs an API call from a button: disables it meanwhile, toasts the outcome. */
async function busy(ctx, button, fn, okText) {
  if (button) button.disabled = true;
  try {
    const out = await fn();
    if (okText) ctx.toast(okText, "info");
    return { ok: true, out };
  } catch (err) {
    ctx.toast(errText(err), "error");
    return { ok: false, err };
  } finally {
    if (button) button.disabled = false;
  }
}

// -- providers ---------------------------------------------------------------

function providerCard(ctx, p, env) {
  const head = h("div", { class: "provider-head" }, h("strong", {}, p.name), status(p.connected),
    p.key_hint ? h("code", { class: "key-hint" }, p.key_hint) : null,
    p.from_env ? h("span", { class: "muted" }, "key from the environment") : null);
  const card = h("li", { class: "provider", dataset: { provider: p.id } }, head);
  if (p.id === "custom") {
    card.append(h("p", { class: "muted" }, "OpenAI-compatible servers: add them under Custom models."));
  } else if (p.auth_type === "oauth") {
    card.append(oauthControls(ctx, p, env));
  } else {
    card.append(keyForm(ctx, p, env));
  }
  if (p.connected && p.id !== "custom") {
    const out = h("button", { type: "button", class: "provider-disconnect" }, "Disconnect");
    out.addEventListener("click", async () => {
      if (!(await confirmDialog(`Disconnect ${p.name}? Its stored key is forgotten.`))) return;
      const r = await busy(ctx, out, () => ctx.api.del(`/providers/${p.id}`), `${p.name} disconnected.`);
      if (r.ok) await env.changed();
    });
    card.append(out);
  }
  return card;
}

function keyForm(ctx, p, env) {
  const key = input({ type: "password", name: "api_key", autocomplete: "off", class: "provider-key",
    placeholder: p.connected ? "Replace the key" : "API key" });
  const go = h("button", { type: "submit", class: "primary provider-connect" }, p.connected ? "Replace" : "Connect");
  const form = h("form", { class: "inline-form" }, key, go);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!key.value.trim()) return;
    const body = { api_key: key.value.trim() };
    const r = await busy(ctx, go, () => ctx.api.post(`/providers/${p.id}/connect`, body), `${p.name} connected.`);
    if (r.ok) {
      key.value = "";
      await env.changed();
    }
  });
  return form;
}

/**
 * The openai-codex sign-in: open a tab at once (inside the click, so no popup
 * blocker objects), cut it off from this page, send it to the provider's page
 * once the server gave the URL, and poll the status until the flow ends.
 */
function oauthControls(ctx, p, env) {
  const box = h("div", { class: "oauth" });
  const start = h("button", { type: "button", class: "primary oauth-start" },
    p.connected ? "Sign in again" : "Sign in with ChatGPT");
  const note = h("div", { class: "oauth-status" });
  box.append(start, note);
  start.addEventListener("click", async () => {
    let tab = null;
    try {
      tab = window.open("", "_blank");
      if (tab) tab.opener = null;
    } catch {
      tab = null;
    }
    const r = await busy(ctx, start, () => ctx.api.post(`/providers/${p.id}/oauth/browser/start`));
    if (!r.ok) {
      if (tab) tab.close();
      return;
    }
    if (tab) tab.location.href = r.out.url;
    waiting(r.out.url);
  });
  function waiting(url) {
    clear(note);
    note.append(h("span", {}, "Waiting for the sign-in to finish… "), url
      ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", class: "oauth-link" }, "Open the sign-in page")
      : null);
    if (env.oauthWatching) return; // one poll per view, whichever card began it
    env.oauthWatching = true;
    env.poll(async () => {
      let s;
      try {
        s = await ctx.api.get(`/providers/${p.id}/oauth/status`);
      } catch (err) {
        env.oauthWatching = false;
        throw err;
      }
      if (s.status === "pending") return true;
      env.oauthWatching = false;
      clear(note);
      if (s.connected) {
        ctx.toast(`${p.name} connected.`, "info");
        await env.changed();
      } else {
        const why = s.error ? `: ${s.error}` : "";
        note.append(h("span", { class: "error" }, `Sign-in ${s.status}${why}`));
        ctx.toast(`Sign-in ${s.status}${why}`, "error");
      }
      return false;
    });
  }
  // A sign-in begun before this view was opened (or before a reload) is still
  // followed until it ends.
  if (!p.connected) {
    ctx.api.get(`/providers/${p.id}/oauth/status`)
      .then((s) => { if (s.status === "pending") waiting(null); })
      .catch(() => {});
  }
  return box;
}

async function loadProviders(ctx, env) {
  const { providers } = await ctx.api.get("/providers");
  return [h("ul", { class: "provider-list" }, ...providers.map((p) => providerCard(ctx, p, env)))];
}

// -- custom models -------------------------------------------------------------

async function loadCustom(ctx, env) {
  const { providers } = await ctx.api.get("/providers");
  const custom = providers.find((p) => p.id === "custom");
  const ids = custom ? custom.models : [];
  const list = h("ul", { class: "custom-list" }, ...ids.map((id) => {
    const rm = h("button", { type: "button", class: "danger custom-remove" }, "Remove");
    rm.addEventListener("click", async () => {
      if (!(await confirmDialog(`Remove the custom model ${id}?`))) return;
      const r = await busy(ctx, rm, () => ctx.api.del(`/models/custom/${idPath(id)}`), `${id} removed.`);
      if (r.ok) await env.changed();
    });
    return h("li", { class: "custom-model", dataset: { model: id } }, h("code", {}, id), rm);
  }));
  if (!ids.length) list.append(h("li", { class: "muted" }, "None yet."));

  const f = {
    model_id: input({ type: "text", name: "model_id", required: true, placeholder: "llama3:8b", class: "custom-id" }),
    base_url: input({ type: "url", name: "base_url", required: true, placeholder: "http://127.0.0.1:11434/v1",
      class: "custom-url" }),
    context_window: input({ type: "number", name: "context_window", min: "2", required: true, class: "custom-ctx" },
      32768),
    max_output_tokens: input({ type: "number", name: "max_output_tokens", min: "1", required: true,
      class: "custom-out" }, 4096),
    api_key: input({ type: "password", name: "api_key", autocomplete: "off", class: "custom-key",
      placeholder: "optional" }),
  };
  const vision = checkbox(false, { name: "vision", class: "custom-vision" });
  const add = h("button", { type: "submit", class: "primary custom-add" }, "Add model");
  const form = h("form", { class: "custom-form grid-form" },
    field("Model id", f.model_id), field("Base URL", f.base_url, "An OpenAI-compatible API."),
    field("Context window", f.context_window), field("Max output tokens", f.max_output_tokens),
    field("API key", f.api_key), h("label", { class: "check" }, vision, "Accepts images"),
    h("div", { class: "actions" }, add));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {
      model_id: f.model_id.value.trim(),
      base_url: f.base_url.value.trim(),
      context_window: parseInt(f.context_window.value, 10),
      max_output_tokens: parseInt(f.max_output_tokens.value, 10),
      vision: vision.checked,
    };
    if (f.api_key.value) body.api_key = f.api_key.value;
    const r = await busy(ctx, add, () => ctx.api.post("/models/custom", body), `${body.model_id} added.`);
    if (r.ok) await env.changed();
  });
  return [list, h("details", { class: "custom-add-box" }, h("summary", {}, "Add a custom model"), form)];
}

// -- model roles -----------------------------------------------------------------

/** Option value for a model: provider:id, so the same id at two providers stays distinct. */
function roleOptions(groups) {
  return groups.map((g) => h("optgroup", { label: g.provider },
    ...g.models.map((m) => h("option", { value: `${g.provider}:${m.id}` }, m.id))));
}

/** The option to select for a configured value, which may be bare or provider-prefixed. */
function matchValue(groups, current) {
  if (!current) return "";
  for (const g of groups) {
    for (const m of g.models) {
      if (current === `${g.provider}:${m.id}` || current === m.id) return `${g.provider}:${m.id}`;
    }
  }
  return null;
}

async function loadRoles(ctx, env) {
  const models = await ctx.api.get("/models");
  const rows = ROLES.map(([key, label, hint]) => {
    const current = models[key];
    const sel = h("select", { name: key, class: `role-select role-${key}` },
      h("option", { value: "" }, key === "chat_model" ? "— none —" : "— same as chat —"),
      ...roleOptions(models.groups));
    const matched = matchValue(models.groups, current);
    if (matched === null) {
      sel.append(h("option", { value: current }, `${current} (not offered now)`));
      sel.value = current;
    } else {
      sel.value = matched;
    }
    sel.addEventListener("change", async () => {
      const r = await busy(ctx, sel, () => ctx.api.patch("/config", { [key]: sel.value || null }),
        `${label} model: ${sel.value || "cleared"}.`);
      if (!r.ok) sel.value = matched ?? current;
      await env.rolesChanged();
    });
    return field(`${label} model`, sel, hint);
  });
  if (!models.groups.length) {
    rows.unshift(h("p", { class: "warning" }, "No model is available: connect a provider or add a custom model."));
  }
  return [h("div", { class: "roles grid-form" }, ...rows)];
}

// -- embedding -------------------------------------------------------------------

function progressLine(reindex) {
  if (!reindex || reindex.status === "idle") return null;
  const bar = h("progress", { class: "reindex-bar", max: String(Math.max(reindex.total, 1)) });
  bar.value = reindex.done;
  const model = reindex.embedding_model ? ` to ${reindex.embedding_model}` : "";
  const text = reindex.status === "running"
    ? `Re-indexing${model}: ${reindex.done} of ${reindex.total}`
    : reindex.status === "completed" ? `Re-index${model} completed (${reindex.done} of ${reindex.total}).`
      : `Re-index${model} ${reindex.status}${reindex.error ? ": " + reindex.error : ""}`;
  return h("div", { class: `reindex reindex-${reindex.status}` }, bar, h("span", { class: "reindex-text" }, text));
}

function drawReindex(slot, reindex) {
  clear(slot);
  const line = progressLine(reindex);
  if (line) slot.append(line);
}

// Draws a running re-index from GET /memory/events (started, progress, finished)
// instead of polling the audit. A stream opened after the re-index ended hears
// nothing more, so once open the audit is read once; a stream that cannot be
// opened at all falls back to polling it.
function followReindex(ctx, env, slot) {
  env.reindexFeed?.abort();
  const abort = new AbortController();
  env.reindexFeed = abort;
  let over = false;
  const finish = async (reindex) => {
    if (over) return;
    over = true;
    abort.abort();
    drawReindex(slot, reindex);
    await env.embeddingDone();
  };
  const onEvent = (type, data) => {
    if (over) return;
    if (type === "reindex_finished") finish(data);
    else if (type === "reindex_started" || type === "reindex_progress") {
      drawReindex(slot, { status: "running", done: data.done || 0, total: data.total, embedding_model: data.embedding_model });
    }
  };
  const onOpen = async () => {
    const a = await ctx.api.get("/memory/audit").catch(() => null);
    if (a && a.reindex.status !== "running") finish(a.reindex);
  };
  const poll = () => env.poll(async () => {
    const a = await ctx.api.get("/memory/audit");
    if (a.reindex.status === "running") {
      drawReindex(slot, a.reindex);
      return true;
    }
    await finish(a.reindex);
    return false;
  });
  ctx.api.stream("/memory/events", { onEvent, onOpen, signal: abort.signal })
    .catch(() => { if (!abort.signal.aborted) poll(); });
}

async function loadEmbedding(ctx, env) {
  const [emb, audit] = await Promise.all([
    ctx.api.get("/models/embedding"),
    ctx.api.get("/memory/audit").catch(() => null),
  ]);
  const sel = h("select", { name: "embedding_model", class: "embedding-select" },
    ...emb.models.map((m) => {
      const o = h("option", { value: m.id }, `${m.id} (${m.dimensions} dims)${m.available ? "" : " — connect its provider"}`);
      o.disabled = !m.available;
      return o;
    }));
  sel.value = emb.current;
  const go = h("button", { type: "button", class: "embedding-apply" }, "Change and re-index");
  const progress = h("div", { class: "reindex-slot" });
  const reindex = audit && audit.reindex;
  const line = progressLine(reindex);
  if (line) progress.append(line);
  const watch = () => followReindex(ctx, env, progress);
  if (reindex && reindex.status === "running") watch();
  go.addEventListener("click", async () => {
    const target = sel.value;
    const text = target === emb.current
      ? `Re-embed what is missing with ${target}?`
      : `Switch to ${target}? Every fact and observation is embedded again; recall keeps working meanwhile.`;
    if (!(await confirmDialog(text))) return;
    const r = await busy(ctx, go, () => ctx.api.post("/config/embedding", { embedding_model: target }));
    if (!r.ok) return;
    drawReindex(progress, { status: "running", done: 0, total: r.out.total, embedding_model: target });
    watch();
  });
  return [h("p", {}, "Current: ", h("code", { class: "embedding-current" }, emb.current)),
    h("div", { class: "inline-form" }, sel, go), progress];
}

// -- integrations ----------------------------------------------------------------

async function loadIntegrations(ctx, env) {
  const cfg = await ctx.api.get("/config");
  const i = cfg.integrations;
  const toggle = (key, label, on, extra) => {
    const box = checkbox(on, { name: key, class: `integration-${key}` });
    box.addEventListener("change", async () => {
      const r = await busy(ctx, null, () => ctx.api.patch("/config", { [key]: box.checked }));
      if (!r.ok) box.checked = !box.checked;
      await env.integrationsChanged();
    });
    return h("label", { class: "check" }, box, label, extra ? h("span", { class: "muted" }, ` ${extra}`) : null);
  };
  const web = h("select", { name: "web_search", class: "integration-web" },
    ...WEB_MODES.map(([v, t]) => h("option", { value: v }, t)));
  web.value = i.web.mode;
  web.addEventListener("change", async () => {
    await busy(ctx, web, () => ctx.api.patch("/config", { web_search: web.value }), "Web search updated.");
    await env.integrationsChanged();
  });
  return [
    toggle("memory_enabled", "Memory", i.memory.enabled, i.memory.connected ? "" : "(not loaded)"),
    toggle("dreams_enabled", "Dreams", i.memory.dreams),
    toggle("account_enabled", "Mail and calendar account", i.account.enabled,
      i.account.connected ? "(connected)" : "(not configured on the server)"),
    field("Web search", web, `In use: ${i.web.provider}`),
  ];
}

// -- services --------------------------------------------------------------------

async function loadServices(ctx, env) {
  const { services } = await ctx.api.get("/services");
  return [h("ul", { class: "service-list" }, ...services.map((s) => {
    const item = h("li", { class: "service", dataset: { service: s.id } },
      h("div", { class: "provider-head" }, h("strong", {}, s.name), status(s.connected),
        s.key_hint ? h("code", { class: "key-hint" }, s.key_hint) : null,
        s.from_env ? h("span", { class: "muted" }, "from the environment") : null));
    const key = input({ type: "password", name: "api_key", autocomplete: "off", class: "service-key",
      placeholder: s.id === "telegram" ? "Bot token" : "API key" });
    const go = h("button", { type: "submit", class: "primary service-connect" }, s.connected ? "Replace" : "Connect");
    const form = h("form", { class: "inline-form" }, key, go);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!key.value.trim()) return;
      const r = await busy(ctx, go, () => ctx.api.post(`/services/${s.id}/connect`, { api_key: key.value.trim() }),
        `${s.name} connected.`);
      if (r.ok) await env.servicesChanged();
    });
    item.append(form);
    if (s.connected) {
      const out = h("button", { type: "button", class: "service-disconnect" }, "Disconnect");
      out.addEventListener("click", async () => {
        if (!(await confirmDialog(`Disconnect ${s.name}?`))) return;
        const r = await busy(ctx, out, () => ctx.api.del(`/services/${s.id}`), `${s.name} disconnected.`);
        if (r.ok) await env.servicesChanged();
      });
      item.append(out);
    }
    return item;
  }))];
}

// -- telegram --------------------------------------------------------------------

const TELEGRAM_STATUS = {
  stopped: ["status-muted", "not connected"],
  starting: ["status-running", "starting"],
  polling: ["status-ok", "listening"],
  retrying: ["status-running", "retrying"],
  error: ["status-error", "error"],
};

function telegramBadge(state) {
  const [cls, text] = TELEGRAM_STATUS[state.status] || ["status-muted", state.status];
  return h("span", { class: `badge ${cls}` }, text);
}

function localTime(iso) {
  return new Date(iso).toLocaleString();
}

async function loadTelegram(ctx, env) {
  const state = await ctx.api.get("/channels/telegram");
  const refresh = h("button", { type: "button", class: "telegram-refresh" }, "Refresh");
  refresh.addEventListener("click", () => env.telegramChanged());
  const head = h("div", { class: "telegram-state" }, h("strong", {}, "Bot"), telegramBadge(state),
    state.bot_username ? h("code", {}, `@${state.bot_username}`) : null, refresh);
  const reason = state.reason ? h("p", { class: "error telegram-reason" }, state.reason) : null;
  // The channel restarts in the background after a token is connected.
  if (state.status === "starting") env.poll(async () => { await env.telegramChanged(); return false; });

  const act = async (button, fn, okText) => {
    const r = await busy(ctx, button, fn, okText);
    if (r.ok) await env.telegramChanged();
  };
  const pending = state.pairings.length
    ? h("ul", { class: "service-list telegram-pairings" }, ...state.pairings.map((p) => {
      const yes = h("button", { type: "button", class: "primary telegram-approve" }, "Approve");
      const no = h("button", { type: "button", class: "telegram-deny" }, "Deny");
      yes.addEventListener("click", () => act(yes, () => ctx.api.post("/channels/telegram/pairings", { code: p.code }),
        `${p.title} may now talk to famulus.`));
      no.addEventListener("click", () => act(no, () => ctx.api.del(`/channels/telegram/pairings/${encodeURIComponent(p.code)}`),
        `Request of ${p.title} denied.`));
      return h("li", { class: "service telegram-pairing", dataset: { code: p.code } },
        h("strong", {}, p.title), h("code", {}, p.code),
        h("span", { class: "muted" }, `chat ${p.chat_id}, until ${localTime(p.expires_at)}`), yes, no);
    }))
    : h("p", { class: "muted telegram-no-pairings" }, "No one is asking for access.");

  const code = input({ type: "text", name: "code", autocomplete: "off", class: "telegram-code",
    placeholder: "Pairing code", maxlength: 32 });
  const approve = h("button", { type: "submit", class: "primary" }, "Approve code");
  const form = h("form", { class: "inline-form telegram-code-form" }, code, approve);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!code.value.trim()) return;
    await act(approve, () => ctx.api.post("/channels/telegram/pairings", { code: code.value.trim() }), "Chat approved.");
  });

  const chats = state.chats.length
    ? h("ul", { class: "service-list telegram-chats" }, ...state.chats.map((c) => {
      const out = h("button", { type: "button", class: "telegram-remove" }, "Remove");
      out.addEventListener("click", async () => {
        if (!(await confirmDialog(`Stop serving ${c.title} on Telegram?`))) return;
        await act(out, () => ctx.api.del(`/channels/telegram/chats/${c.chat_id}`), `${c.title} removed.`);
      });
      return h("li", { class: "service telegram-chat", dataset: { chat: String(c.chat_id) } },
        h("strong", {}, c.title), h("span", { class: "muted" }, `chat ${c.chat_id}`), out);
    }))
    : h("p", { class: "muted" }, "No chat is allowed yet.");

  return [head, reason, h("h4", {}, "Asking for access"), pending, form, h("h4", {}, "Allowed chats"), chats];
}

// -- notifiers -------------------------------------------------------------------

/** Inputs for one notifier type's fields; returns {el, read()}. */
function configFields(fields, config) {
  const inputs = fields.map((name) => input({ type: "text", name, required: true, class: `notifier-field-${name}` },
    config ? config[name] : ""));
  const el = h("div", { class: "notifier-fields" }, ...fields.map((name, i) => field(name, inputs[i])));
  return { el, read: () => Object.fromEntries(fields.map((name, i) => [name, inputs[i].value.trim()])) };
}

function notifierForm(ctx, types, existing, onDone) {
  const names = Object.keys(types);
  const name = input({ type: "text", name: "name", required: true, maxlength: "64", class: "notifier-name",
    pattern: "[A-Za-z0-9._\\-]+" }, existing ? existing.name : "");
  name.disabled = Boolean(existing);
  const type = h("select", { name: "type", class: "notifier-type" }, ...names.map((t) => h("option", { value: t }, t)));
  type.value = existing ? existing.type : names[0];
  const slot = h("div", {});
  let cfg = null;
  const showFields = () => {
    clear(slot);
    const same = existing && existing.type === type.value;
    cfg = configFields(types[type.value].fields, same ? existing.config : null);
    slot.append(cfg.el);
  };
  type.addEventListener("change", showFields);
  showFields();
  const save = h("button", { type: "submit", class: "primary notifier-save" }, existing ? "Save" : "Add notifier");
  const cancel = h("button", { type: "button", class: "notifier-cancel" }, "Cancel");
  cancel.addEventListener("click", () => onDone(false));
  const form = h("form", { class: "notifier-form grid-form" }, field("Name", name), field("Type", type), slot,
    h("div", { class: "actions" }, save, cancel));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const config = cfg.read();
    let call;
    if (existing) {
      const body = type.value === existing.type ? { config } : { type: type.value, config };
      call = () => ctx.api.patch(`/notifiers/configs/${encodeURIComponent(existing.name)}`, body);
    } else {
      call = () => ctx.api.post("/notifiers/configs", { name: name.value.trim(), type: type.value, config });
    }
    const r = await busy(ctx, save, call, existing ? "Notifier saved." : "Notifier added.");
    if (r.ok) onDone(true);
  });
  return form;
}

async function loadNotifiers(ctx, env) {
  const [{ types }, { configs }, config] = await Promise.all([
    ctx.api.get("/notifiers/types"),
    ctx.api.get("/notifiers/configs"),
    ctx.api.get("/config"),
  ]);
  const isDefault = (n) => config.default_notifier === n.name;
  const formSlot = h("div", { class: "notifier-form-slot" });
  const done = async (changed) => {
    clear(formSlot);
    if (changed) await env.notifiersChanged();
  };
  const list = h("ul", { class: "notifier-list" }, ...configs.map((n) => {
    const target = Object.entries(n.config).map(([k, v]) => `${k}: ${v}`).join(", ");
    const test = h("button", { type: "button", class: "notifier-test" }, "Test");
    test.addEventListener("click", () =>
      busy(ctx, test, () => ctx.api.post(`/notifiers/configs/${encodeURIComponent(n.name)}/test`),
        `Test message sent to ${n.name}.`));
    // the agent's schedule tool delivers through the default one (issue 11)
    const makeDefault = h("button", { type: "button", class: "notifier-default" },
      isDefault(n) ? "Unset default" : "Make default");
    makeDefault.addEventListener("click", async () => {
      const r = await busy(ctx, makeDefault,
        () => ctx.api.patch("/config", { default_notifier: isDefault(n) ? null : n.name }),
        isDefault(n) ? "No default notifier now." : `${n.name} is the default notifier.`);
      if (r.ok) await env.notifiersChanged();
    });
    const edit = h("button", { type: "button", class: "notifier-edit" }, "Edit");
    edit.addEventListener("click", () => {
      clear(formSlot);
      formSlot.append(notifierForm(ctx, types, n, done));
    });
    const del = h("button", { type: "button", class: "danger notifier-delete" }, "Delete");
    del.addEventListener("click", async () => {
      if (!(await confirmDialog(`Delete the notifier ${n.name}?`))) return;
      const r = await busy(ctx, del, () => ctx.api.del(`/notifiers/configs/${encodeURIComponent(n.name)}`),
        `${n.name} deleted.`);
      if (r.ok) await env.notifiersChanged();
    });
    return h("li", { class: "notifier", dataset: { notifier: n.name } },
      h("strong", {}, n.name), h("span", { class: "badge" }, n.type),
      isDefault(n) ? h("span", { class: "badge notifier-is-default" }, "default") : null,
      h("span", { class: "notifier-target muted" }, target),
      h("span", { class: "muted" }, `added ${when(n.created_at)}`),
      h("span", { class: "row-actions" }, test, makeDefault, edit, del));
  }));
  if (!configs.length) list.append(h("li", { class: "muted" }, "None yet."));
  const add = h("button", { type: "button", class: "notifier-new" }, "Add a notifier");
  add.addEventListener("click", () => {
    clear(formSlot);
    formSlot.append(notifierForm(ctx, types, null, done));
  });
  return [list, add, formSlot];
}

// -- directives ------------------------------------------------------------------

async function loadDirectives(ctx) {
  const { content } = await ctx.api.get("/directives");
  const area = h("textarea", { name: "directives", class: "directives-text", rows: "10",
    maxlength: String(MAX_DIRECTIVES), placeholder: "How the agent should behave, e.g. “Answer in German.”" });
  area.value = content;
  const count = h("span", { class: "muted directives-count" });
  const recount = () => { count.textContent = `${area.value.length} / ${MAX_DIRECTIVES}`; };
  area.addEventListener("input", recount);
  recount();
  const save = h("button", { type: "submit", class: "primary directives-save" }, "Save directives");
  const form = h("form", { class: "directives-form" }, area, h("div", { class: "actions" }, save, count));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const r = await busy(ctx, save, () => ctx.api.put("/directives", { content: area.value }), "Directives saved.");
    if (r.ok) {
      area.value = r.out.content;
      recount();
    }
  });
  return [form];
}

// -- the view --------------------------------------------------------------------

async function mount(root, ctx) {
  const timers = new Set();
  let alive = true;
  /** Calls `step` every POLL_MS while it answers true; stops with the view. */
  function poll(step) {
    const tick = async () => {
      if (!alive) return;
      let again = false;
      try {
        again = await step();
      } catch (err) {
        ctx.toast(errText(err), "error");
      }
      if (again && alive) timers.add(setTimeout(tick, POLL_MS));
    };
    timers.add(setTimeout(tick, POLL_MS));
  }
  const env = {
    poll,
    oauthWatching: false,
    reindexFeed: null, // the AbortController of the GET /memory/events a re-index is drawn from
    changed: async () => { await Promise.all([providers.reload(), custom.reload(), roles.reload(), embedding.reload()]); },
    rolesChanged: async () => { await roles.reload(); },
    embeddingDone: async () => { await Promise.all([embedding.reload(), integrations.reload()]); },
    integrationsChanged: async () => { await integrations.reload(); },
    servicesChanged: async () => { await Promise.all([services.reload(), integrations.reload(), telegram.reload()]); },
    telegramChanged: async () => { await telegram.reload(); },
    notifiersChanged: async () => { await notifiers.reload(); },
  };
  const providers = section("providers", "Model providers",
    "Connect a provider with its API key, or sign in to ChatGPT for the Codex models.",
    () => loadProviders(ctx, env));
  const custom = section("custom", "Custom models", "Any OpenAI-compatible server (Ollama, llama.cpp, vLLM…).",
    () => loadCustom(ctx, env));
  const roles = section("roles", "Model roles", "Which model does what.", () => loadRoles(ctx, env));
  const embedding = section("embedding", "Embedding model",
    "Turns memory into vectors for recall. Changing it re-embeds everything in the background.",
    () => loadEmbedding(ctx, env));
  const integrations = section("integrations", "Integrations", null, () => loadIntegrations(ctx, env));
  const services = section("services", "Services", "Keyed web search (Exa) and the Telegram bot (for notifiers and chatting).",
    () => loadServices(ctx, env));
  const telegram = section("telegram", "Telegram",
    "Who may talk to famulus through the Telegram bot. A stranger who writes to the bot gets a code; approve it here.",
    () => loadTelegram(ctx, env));
  const notifiers = section("notifiers", "Notifiers", "Where automations send their results.",
    () => loadNotifiers(ctx, env));
  const directives = section("directives", "Directives",
    "Standing instructions the agent follows in every conversation.", () => loadDirectives(ctx));
  const all = [providers, custom, roles, embedding, integrations, services, telegram, notifiers, directives];
  const nav = h("nav", { class: "settings-nav" }, ...all.map((s) => {
    const title = s.el.querySelector("h3").textContent;
    return h("button", { type: "button", class: "link", on: { click: () => s.el.scrollIntoView({ block: "start" }) } },
      title);
  }));
  root.classList.add("view-settings");
  root.append(h("header", { class: "view-header" }, h("h2", {}, "Settings")), nav, ...all.map((s) => s.el));
  // #/settings/<section> (e.g. the chat's "Connect a model" link) opens at that
  // section; again once loaded, as the sections above it grow while they load.
  const target = all.find((s) => s.el.id === `settings-${ctx.params[0]}`);
  target?.el.scrollIntoView({ block: "start" });
  await Promise.all(all.map((s) => s.reload()));
  if (alive) target?.el.scrollIntoView({ block: "start" });
  return () => {
    alive = false;
    for (const t of timers) clearTimeout(t);
    env.reindexFeed?.abort();
  };
}
