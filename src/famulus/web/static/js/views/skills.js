// The skills view: every skill the agent can use, where it comes from, and
// installing or removing global ones.
//
// Skills are grouped by where discovery found them (builtin, the project's
// .skills/, the global folder); only global skills can be removed from here, as
// the API allows. Installing takes "owner/repo/path/to/skill" on the code host.
// Names and descriptions come from SKILL.md files fetched from elsewhere, so they
// are only ever put in as plain text.

import { h, clear, confirmDialog } from "../dom.js";

const LOCATIONS = [
  ["builtin", "Built in", "Shipped with famulus."],
  ["project", "Project", "From .skills/ in the server's working directory; remove the folder to remove one."],
  ["global", "Installed", "Installed from the code host into famulus's home; these can be removed here."],
];
// The API's own check is stricter; this catches an obvious slip before a round trip.
const SOURCE_RE = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+(\/[^/\s]+)+$/;

export const view = { name: "skills", title: "Skills", mount };

async function mount(root, ctx) {
  const state = { alive: true };
  const groups = h("div", { class: "skills-groups" });
  const load = async () => {
    let skills;
    try {
      skills = (await ctx.api.get("/skills")).skills;
    } catch (err) {
      ctx.toast(errorText(err), "error");
      return;
    }
    if (!state.alive) return;
    clear(groups);
    groups.append(...LOCATIONS.map(([loc, title, note]) => group(ctx, loc, title, note, skills, load)));
  };
  root.classList.add("skills-view");
  root.append(
    h("header", { class: "skills-head" }, h("h2", {}, "Skills")),
    h(
      "p",
      { class: "muted" },
      "Skills are instructions (and sometimes scripts) the agent can follow; in the chat, type / to use one.",
    ),
    installForm(ctx, load),
    groups,
  );
  await load();
  return () => {
    state.alive = false;
  };
}

function errorText(err) {
  return err && err.detail ? err.detail : String(err && err.message ? err.message : err);
}

function installForm(ctx, reload) {
  const source = h("input", {
    type: "text",
    name: "source",
    placeholder: "owner/repo/path/to/skill",
    "aria-label": "Skill source on the code host",
    autocomplete: "off",
    spellcheck: "false",
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Install");
  const form = h(
    "form",
    { class: "skills-install" },
    h("label", { class: "skills-install-label" }, "Install from the code host"),
    h("div", { class: "skills-install-row" }, source, submit),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const value = source.value.trim();
    if (!SOURCE_RE.test(value)) {
      ctx.toast("Give the skill's folder as owner/repo/path/to/skill.", "error");
      return;
    }
    submit.disabled = true;
    submit.textContent = "Installing…";
    try {
      const got = await ctx.api.post("/skills/install", { source: value });
      source.value = "";
      ctx.toast(`Installed /${got.name}.`, "info");
      await reload();
    } catch (err) {
      ctx.toast(errorText(err), "error");
    } finally {
      submit.disabled = false;
      submit.textContent = "Install";
    }
  });
  return form;
}

function group(ctx, loc, title, note, skills, reload) {
  const mine = skills.filter((s) => s.location === loc).sort((a, b) => a.name.localeCompare(b.name));
  return h(
    "section",
    { class: `skills-group skills-${loc}`, dataset: { location: loc } },
    h("h3", {}, `${title} (${mine.length})`),
    h("p", { class: "muted" }, note),
    mine.length
      ? h("ul", { class: "skills-list" }, ...mine.map((s) => skillItem(ctx, s, reload)))
      : h("p", { class: "skills-empty muted" }, "None."),
  );
}

function skillItem(ctx, skill, reload) {
  const params = skill.parameters ? describeParameters(skill.parameters) : null;
  const actions = [];
  if (skill.location === "global") {
    const remove = h(
      "button",
      { type: "button", class: "danger skills-uninstall", on: { click: () => uninstall(ctx, skill, remove, reload) } },
      "Uninstall",
    );
    actions.push(remove);
  }
  return h(
    "li",
    { class: "skills-item", dataset: { name: skill.name } },
    h(
      "div",
      { class: "skills-title" },
      h("code", { class: "skills-name" }, `/${skill.name}`),
      skill.has_script ? h("span", { class: "badge" }, "has scripts") : null,
    ),
    h("div", { class: "skills-description" }, skill.description),
    params ? h("div", { class: "skills-params muted" }, `Parameters: ${params}`) : null,
    h("div", { class: "skills-path muted" }, skill.path),
    actions.length ? h("div", { class: "skills-actions" }, ...actions) : null,
  );
}

/** The front matter's `parameters` in one line, whatever shape the author chose. */
function describeParameters(params) {
  if (Array.isArray(params)) {
    return params.map((p) => (p && typeof p === "object" ? p.name || JSON.stringify(p) : String(p))).join(", ");
  }
  if (params && typeof params === "object") return Object.keys(params).join(", ");
  return String(params);
}

async function uninstall(ctx, skill, el, reload) {
  if (!(await confirmDialog(`Uninstall /${skill.name}? Its folder is deleted.`, "Uninstall"))) return;
  el.disabled = true;
  try {
    await ctx.api.del(`/skills/${encodeURIComponent(skill.name)}`);
    ctx.toast(`Uninstalled /${skill.name}.`, "info");
    await reload();
  } catch (err) {
    el.disabled = false;
    ctx.toast(errorText(err), "error");
  }
}
