// The automations view: the list with next runs, a form with a trigger builder
// (at a time on some days, every N minutes/hours, before calendar events), the
// enabled and writable switches, run now, and each automation's recent runs
// with their output and deliveries. It follows GET /automations/events so a run
// started by the scheduler or by "Run now" shows up without reloading.
import { h, clear, markdown, when, confirmDialog } from "../dom.js";

export const view = { name: "automations", title: "Automations", mount };

const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const DAY_LABELS = { mon: "Mon", tue: "Tue", wed: "Wed", thu: "Thu", fri: "Fri", sat: "Sat", sun: "Sun" };
const NAMED_DAYS = { daily: "every day", weekdays: "on weekdays", weekends: "on weekends" };

/** A person-readable sentence for a trigger, e.g. "07:30 on weekdays". */
export function describeTrigger(trigger) {
  if (!trigger) return "";
  if (trigger.type === "event") {
    const lead = Number(trigger.lead_minutes || 0);
    return lead ? `${lead} min before each calendar event` : "when a calendar event starts";
  }
  if (trigger.cron) return `cron ${trigger.cron}`;
  if (trigger.once) return `once at ${trigger.once.replace("T", " ")}`;
  if (trigger.every) {
    const n = parseInt(trigger.every, 10);
    const unit = trigger.every.endsWith("h") ? "hour" : "minute";
    return n === 1 ? `every ${unit}` : `every ${n} ${unit}s`;
  }
  const days = trigger.days || "daily";
  const named = NAMED_DAYS[days];
  const list = days.split(",").map((d) => DAY_LABELS[d] || d).join(", ");
  return `${trigger.at} ${named || "on " + list}`;
}

/** A labelled form row: <label>text <control></label>. */
function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", { class: "field-label" }, label), control,
    hint ? h("span", { class: "field-hint" }, hint) : null);
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

function select(options, value, attrs = {}) {
  const el = h("select", attrs, ...options.map(([v, text]) => h("option", { value: v }, text)));
  if (value !== undefined) el.value = value;
  return el;
}

/**
 * The trigger builder: three kinds, each with its own small set of controls.
 * Returns {el, read()} where read() gives the trigger object the API takes.
 */
function triggerBuilder(trigger) {
  const t = trigger || { type: "time", at: "08:00", days: "daily" };
  const kindOf = t.type === "event" ? "calendar" : t.every ? "every" : t.cron ? "cron" : t.once ? "once" : "at";
  const kind = select(
    [["at", "At a time"], ["every", "Repeatedly"], ["calendar", "Before calendar events"],
      ["cron", "Cron expression"], ["once", "Once"]],
    kindOf, { class: "trigger-kind", name: "trigger-kind" });

  // at / days
  const at = input({ type: "time", class: "trigger-at", name: "at", required: true }, t.at || "08:00");
  const days = t.days || "daily";
  const daysMode = select(
    [["daily", "Every day"], ["weekdays", "Weekdays"], ["weekends", "Weekends"], ["custom", "Chosen days"]],
    NAMED_DAYS[days] ? days : "custom", { class: "trigger-days", name: "days" });
  const chosen = new Set(NAMED_DAYS[days] ? [] : days.split(","));
  const dayBoxes = DAYS.map((d) => {
    const box = checkbox(chosen.has(d), { value: d, class: "trigger-day" });
    return h("label", { class: "day" }, box, DAY_LABELS[d]);
  });
  const dayPicker = h("div", { class: "trigger-daypicker" }, ...dayBoxes);
  const atRow = h("div", { class: "trigger-row" }, field("Time", at), field("Days", daysMode), dayPicker);

  // every
  const everyN = parseInt(t.every || "30", 10) || 30;
  const every = input({ type: "number", min: "1", max: "99999", class: "trigger-every", name: "every" }, everyN);
  const unit = select([["m", "minutes"], ["h", "hours"]], (t.every || "m").endsWith("h") ? "h" : "m",
    { class: "trigger-unit", name: "unit" });
  const everyRow = h("div", { class: "trigger-row" }, field("Every", every), field("Unit", unit));

  // calendar
  const lead = input({ type: "number", min: "0", max: "1440", class: "trigger-lead", name: "lead" },
    t.lead_minutes ?? 15);
  const calRow = h("div", { class: "trigger-row" },
    field("Minutes before", lead, "Needs the calendar account (FAMULUS_CALDAV_URL)."));

  // cron / once (issue 11): kept as typed; the server checks them and says what is wrong
  const cron = input({ type: "text", class: "trigger-cron", name: "cron", placeholder: "0 7 * * 1-5" },
    t.cron || "");
  const cronRow = h("div", { class: "trigger-row" },
    field("Cron", cron, "minute hour day-of-month month day-of-week, in the server's time zone"));
  const once = input({ type: "text", class: "trigger-once", name: "once", placeholder: "2026-12-01T09:30" },
    t.once || "");
  const onceRow = h("div", { class: "trigger-row" },
    field("Date and time", once, "Local time; it switches itself off after it runs."));

  const rows = { at: atRow, every: everyRow, calendar: calRow, cron: cronRow, once: onceRow };
  const el = h("fieldset", { class: "trigger-builder" }, h("legend", {}, "When"), kind, atRow, everyRow, calRow,
    cronRow, onceRow);
  const sync = () => {
    for (const [k, row] of Object.entries(rows)) row.hidden = k !== kind.value;
    dayPicker.hidden = daysMode.value !== "custom";
  };
  kind.addEventListener("change", sync);
  daysMode.addEventListener("change", sync);
  sync();

  function read() {
    if (kind.value === "calendar") {
      return { type: "event", event_type: "calendar", lead_minutes: parseInt(lead.value || "0", 10) };
    }
    if (kind.value === "every") return { type: "time", every: `${parseInt(every.value || "0", 10)}${unit.value}` };
    if (kind.value === "cron") return { type: "time", cron: cron.value };
    if (kind.value === "once") return { type: "time", once: once.value.trim() };
    let d = daysMode.value;
    if (d === "custom") {
      d = dayBoxes.map((l) => l.querySelector("input")).filter((b) => b.checked).map((b) => b.value).join(",");
      if (!d) throw new Error("Choose at least one day.");
    }
    return { type: "time", at: at.value, days: d };
  }
  return { el, read };
}

/** The create/edit form. `auto` is null for a new automation. */
function editor(ctx, auto, notifierNames, onDone) {
  const a = auto || { name: "", description: "", trigger: null, notifiers: [], writable: false, enabled: true };
  const name = input({ type: "text", name: "name", maxlength: "200", required: true, class: "auto-name" }, a.name);
  const desc = h("textarea", { name: "description", rows: "4", required: true, class: "auto-description" });
  desc.value = a.description;
  const trig = triggerBuilder(a.trigger);
  const picked = new Set(a.notifiers);
  const notifierBoxes = notifierNames.map((n) => {
    const box = checkbox(picked.has(n), { value: n, class: "auto-notifier" });
    return h("label", { class: "check" }, box, n);
  });
  const writable = checkbox(a.writable, { name: "writable", class: "auto-writable-input" });
  const enabled = checkbox(a.enabled, { name: "enabled", class: "auto-enabled-input" });
  const save = h("button", { type: "submit", class: "primary auto-save" }, auto ? "Save" : "Create");
  const cancel = h("button", { type: "button", class: "auto-cancel", on: { click: () => onDone(null) } }, "Cancel");

  const form = h("form", { class: "auto-editor card" },
    h("h3", {}, auto ? `Edit “${a.name}”` : "New automation"),
    field("Name", name),
    field("Task", desc, "What the agent should do on each run."),
    trig.el,
    h("fieldset", { class: "auto-notifiers" }, h("legend", {}, "Send the result to"),
      ...(notifierBoxes.length ? notifierBoxes
        : [h("span", { class: "muted" }, "No notifiers yet — add one in Settings.")])),
    h("label", { class: "check" }, writable, "Writable (may change things without asking)"),
    auto ? null : h("label", { class: "check" }, enabled, "Enabled"),
    h("div", { class: "actions" }, save, cancel));

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let trigger;
    try {
      trigger = trig.read();
    } catch (err) {
      ctx.toast(err.message, "error");
      return;
    }
    const body = {
      name: name.value.trim(),
      description: desc.value,
      trigger,
      notifiers: notifierBoxes.map((l) => l.querySelector("input")).filter((b) => b.checked).map((b) => b.value),
      writable: writable.checked,
    };
    if (!auto) body.enabled = enabled.checked;
    save.disabled = true;
    try {
      const saved = auto
        ? await ctx.api.patch(`/automations/${auto.id}`, body)
        : await ctx.api.post("/automations", body);
      ctx.toast(auto ? "Automation saved." : "Automation created.", "info");
      onDone(saved);
    } catch (err) {
      ctx.toast(err.detail || err.message, "error");
    } finally {
      save.disabled = false;
    }
  });
  return form;
}

const STATUS_CLASS = { ok: "ok", error: "error", running: "running", cancelled: "muted", interrupted: "muted" };

function badge(status) {
  return h("span", { class: `badge status-${STATUS_CLASS[status] || "muted"}` }, status || "never run");
}

function deliveryLine(d) {
  const parts = [`${d.notifier}: ${d.status}`];
  if (d.attempts) parts.push(`${d.attempts} ${d.attempts === 1 ? "try" : "tries"}`);
  if (d.next_attempt_at) parts.push(`next ${when(d.next_attempt_at)}`);
  const line = h("li", { class: `delivery delivery-${d.status}` }, parts.join(" · "));
  if (d.last_error) line.append(h("div", { class: "delivery-error" }, d.last_error));
  return line;
}

function runItem(run) {
  const head = h("div", { class: "run-head" }, badge(run.status),
    h("span", { class: "run-time" }, when(run.started_at)),
    run.finished_at ? h("span", { class: "muted" }, ` → ${when(run.finished_at)}`) : null);
  const body = h("div", { class: "run-output markdown" });
  if (run.result) body.append(markdown(run.result));
  else body.append(h("span", { class: "muted" }, run.status === "running" ? "Working…" : "No output."));
  const deliveries = run.deliveries && run.deliveries.length
    ? h("ul", { class: "deliveries" }, ...run.deliveries.map(deliveryLine)) : null;
  return h("li", { class: "run", dataset: { runId: String(run.id) } }, head, body, deliveries);
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Mounts the view; returns the cleanup that stops the event feed. */
async function mount(root, ctx) {
  const state = { automations: [], notifiers: [], editing: undefined, open: new Set(), details: new Map() };
  const abort = new AbortController();
  const list = h("ul", { class: "auto-list" });
  const editorSlot = h("div", { class: "auto-editor-slot" });
  const newBtn = h("button", { type: "button", class: "primary auto-new", on: { click: () => openEditor(null) } },
    "New automation");
  root.classList.add("view-automations");
  root.append(h("header", { class: "view-header" }, h("h2", {}, "Automations"), newBtn), editorSlot, list);

  async function loadNotifiers() {
    try {
      state.notifiers = (await ctx.api.get("/notifiers/configs")).configs.map((c) => c.name);
    } catch (err) {
      state.notifiers = [];
    }
  }

  function openEditor(auto) {
    clear(editorSlot);
    editorSlot.append(editor(ctx, auto, state.notifiers, async (saved) => {
      clear(editorSlot);
      if (saved) {
        await refresh();
        if (state.open.has(saved.id)) await loadRuns(saved.id);
      }
    }));
    editorSlot.scrollIntoView({ block: "nearest" });
    editorSlot.querySelector("input")?.focus();
  }

  async function act(fn, okText) {
    try {
      const out = await fn();
      if (okText) ctx.toast(okText, "info");
      return out;
    } catch (err) {
      ctx.toast(err.detail || err.message, "error");
      return null;
    } finally {
      await refresh();
    }
  }

  // The event feed normally brings a run's end; while a shown run is still
  // running, look again now and then too, so a missed event costs a moment only.
  const followUps = new Map();
  async function loadRuns(id) {
    clearTimeout(followUps.get(id));
    try {
      const detail = await ctx.api.get(`/automations/${id}`);
      state.details.set(id, detail);
      const { runs: _runs, session_id: _sid, ...fields } = detail;
      state.automations = state.automations.map((a) => (a.id === id ? { ...a, ...fields } : a));
      if (detail.running && !abort.signal.aborted) {
        followUps.set(id, setTimeout(() => state.open.has(id) && loadRuns(id), 2000));
      }
    } catch (err) {
      if (err.status !== 404) ctx.toast(err.detail || err.message, "error");
      state.details.delete(id);
    }
    render();
  }

  function runsPanel(a) {
    const detail = state.details.get(a.id);
    if (!detail) return h("div", { class: "runs muted" }, "Loading runs…");
    const transcript = detail.session_id
      ? h("button", { type: "button", class: "link auto-transcript",
          on: { click: () => ctx.navigate(`#/chat/${detail.session_id}`) } }, "Open the transcript")
      : null;
    if (!detail.runs.length) return h("div", { class: "runs muted" }, "No runs yet.");
    return h("div", { class: "runs" }, transcript, h("ol", { class: "run-list" }, ...detail.runs.map(runItem)));
  }

  function card(a) {
    const enabled = checkbox(a.enabled, { class: "auto-enabled", title: "Enabled" });
    enabled.addEventListener("change", () => act(() => ctx.api.post(`/automations/${a.id}/toggle`)));
    const writable = checkbox(a.writable, { class: "auto-writable", title: "Writable" });
    writable.addEventListener("change", () => act(() => ctx.api.post(`/automations/${a.id}/writable`)));
    const open = state.open.has(a.id);
    const runNow = h("button", { type: "button", class: "auto-run",
      on: { click: () => runIt(a) } }, a.running ? "Running…" : "Run now");
    runNow.disabled = Boolean(a.running);
    const next = a.enabled
      ? (a.next_run_at ? `Next: ${when(a.next_run_at)}` : a.trigger.type === "event" ? "Next: no event soon" : "")
      : "Paused";
    return h("li", { class: "auto card", dataset: { id: String(a.id) } },
      h("div", { class: "auto-head" },
        h("h3", { class: "auto-title" }, a.name),
        a.running ? h("span", { class: "badge status-running" }, "running") : badge(a.last_status)),
      h("div", { class: "auto-meta" },
        h("span", { class: "auto-trigger" }, describeTrigger(a.trigger)),
        h("span", { class: "auto-next" }, next),
        a.last_run_at ? h("span", { class: "muted" }, `Last: ${when(a.last_run_at)}`) : null,
        a.notifiers.length ? h("span", { class: "muted" }, `→ ${a.notifiers.join(", ")}`) : null),
      h("p", { class: "auto-desc" }, a.description),
      h("div", { class: "auto-actions" },
        h("label", { class: "check" }, enabled, "Enabled"),
        h("label", { class: "check" }, writable, "Writable"),
        runNow,
        h("button", { type: "button", class: "auto-runs-toggle", on: { click: () => toggleRuns(a.id) } },
          open ? "Hide runs" : "Runs"),
        h("button", { type: "button", class: "auto-edit", on: { click: () => openEditor(a) } }, "Edit"),
        h("button", { type: "button", class: "danger auto-delete", on: { click: () => remove(a) } }, "Delete")),
      open ? runsPanel(a) : null);
  }

  async function runIt(a) {
    state.open.add(a.id);
    await act(() => ctx.api.post(`/automations/${a.id}/run`), "Started.");
    await loadRuns(a.id);
  }

  async function toggleRuns(id) {
    if (state.open.has(id)) {
      state.open.delete(id);
      render();
    } else {
      state.open.add(id);
      render();
      await loadRuns(id);
    }
  }

  async function remove(a) {
    if (!(await confirmDialog(`Delete the automation “${a.name}”? A run in progress is cancelled.`))) return;
    state.open.delete(a.id);
    await act(() => ctx.api.del(`/automations/${a.id}`), "Deleted.");
  }

  // Re-rendering replaces the cards; keep keyboard focus on the same control
  // (a toggled switch, a Runs button) so keyboard use is not thrown back to the top.
  function focusKey() {
    const el = document.activeElement;
    const item = el && list.contains(el) ? el.closest(".auto") : null;
    const cls = item && [...el.classList].find((c) => c.startsWith("auto-"));
    return cls ? `.auto[data-id="${item.dataset.id}"] .${cls}` : null;
  }

  function render() {
    const focused = focusKey();
    clear(list);
    if (!state.automations.length) {
      list.append(h("li", { class: "empty muted" },
        "No automations yet. An automation runs a task for the agent on a schedule and can send you the result."));
      return;
    }
    for (const a of state.automations) list.append(card(a));
    if (focused) list.querySelector(focused)?.focus();
  }

  async function refresh() {
    try {
      state.automations = (await ctx.api.get("/automations")).automations;
    } catch (err) {
      ctx.toast(err.detail || err.message, "error");
    }
    render();
  }

  // Live feed: any event refreshes the list and the open run panel it concerns.
  let pending = null;
  function onEvent(type, data) {
    const payload = typeof data === "string" ? safeParse(data) : data;
    const id = payload && payload.id;
    clearTimeout(pending);
    pending = setTimeout(async () => {
      await refresh();
      if (id !== undefined && state.open.has(id)) await loadRuns(id);
    }, 100);
  }

  await Promise.all([loadNotifiers(), refresh()]);
  ctx.api.stream("/automations/events", { onEvent, signal: abort.signal }).catch(() => {});
  return () => {
    abort.abort();
    clearTimeout(pending);
    for (const t of followUps.values()) clearTimeout(t);
  };
}
