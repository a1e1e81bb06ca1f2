// The shell: sign-in, the nav built from VIEWS, the hash router, toasts.
// A view is a module exporting `view = {name, title, mount}`; mount(root, ctx)
// may return a cleanup function, called when the person leaves the view.
// Each mount gets its own ctx, whose navigate does nothing once that mount is
// over: a view finishing a slow load must not drag the person back to itself.

import { api } from "./api.js";
import { clear, h } from "./dom.js";
import { view as chat } from "./views/chat.js";
import { view as automations } from "./views/automations.js";
import { view as memory } from "./views/memory.js";
import { view as settings } from "./views/settings.js";
import { view as skills } from "./views/skills.js";
import { view as mcp } from "./views/mcp.js";
import { view as usage } from "./views/usage.js";

const VIEWS = [
  chat,
  memory,
  automations,
  skills,
  mcp,
  usage,
  settings,
];

const app = document.getElementById("app");
const toasts = document.getElementById("toasts");
let cleanup = null;
let mounted = 0; // bumps on every mount, so a late async mount cannot clobber a newer one

export function toast(text, kind = "info") {
  const item = h("div", { class: ["toast", kind], role: kind === "error" ? "alert" : "status" }, text);
  toasts.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 4000);
}

function navigate(hash, replace = false) {
  if (replace) {
    history.replaceState(null, "", hash);
    route();
  } else if (location.hash === hash) {
    route();
  } else {
    location.hash = hash;
  }
}

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const found = VIEWS.find((v) => v.name === parts[0]);
  return found ? { view: found, params: parts.slice(1) } : { view: VIEWS[0], params: [] };
}

function unmount() {
  mounted += 1; // whatever was mounted is over, even while its mount still runs
  if (typeof cleanup === "function") {
    try {
      cleanup();
    } catch (error) {
      console.error(error);
    }
  }
  cleanup = null;
}

function shell(active) {
  const links = VIEWS.map((v) =>
    h("a", { href: `#/${v.name}`, class: v === active ? "active" : "", dataset: { view: v.name } }, v.title),
  );
  return h(
    "header",
    { class: "topbar" },
    h("span", { class: "brand" }, "famulus"),
    h("nav", { class: "views" }, links),
    h("button", { type: "button", class: "link", id: "sign-out", on: { click: signOut } }, "Sign out"),
  );
}

async function route() {
  if (!api.key()) return showSignIn();
  unmount();
  const { view, params } = parseHash();
  const token = ++mounted;
  const root = h("section", { class: ["view", `view-${view.name}`] });
  clear(app).append(shell(view), h("main", { class: "content" }, root));
  document.title = `${view.title} · famulus`;
  const ctx = { api, navigate: (hash, replace) => token === mounted && navigate(hash, replace), toast, params };
  try {
    const done = await view.mount(root, ctx);
    if (token === mounted) cleanup = done;
    else if (typeof done === "function") done();
  } catch (error) {
    toast(error.detail || error.message || String(error), "error");
  }
}

function signOut() {
  unmount();
  api.forget();
  showSignIn();
}

// Checks a key with /health (which says auth: true/false without counting as
// a protected call) before keeping it.
async function signIn(key, remember) {
  api.setKey(key, remember);
  let health;
  try {
    health = await api.get("/health");
  } catch (error) {
    api.forget();
    throw error;
  }
  if (health.auth !== true) {
    api.forget();
    throw new Error("That key is not valid for this server.");
  }
}

function showSignIn(message) {
  unmount();
  const input = h("input", {
    type: "password",
    id: "key",
    name: "key",
    autocomplete: "current-password",
    placeholder: "fam_…",
    required: true,
  });
  const remember = h("input", { type: "checkbox", id: "remember" });
  const error = h("p", { class: "error", id: "sign-in-error", role: "alert" }, message || "");
  const form = h(
    "form",
    { class: "sign-in", on: { submit: submit } },
    h("h1", {}, "famulus"),
    h("p", {}, "Paste the API key that ", h("code", {}, "famulus serve"), " printed, or open its sign-in link."),
    h("label", { for: "key" }, "API key"),
    input,
    h("label", { class: "check" }, remember, " Remember on this device"),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    error,
  );
  async function submit(event) {
    event.preventDefault();
    error.textContent = "";
    try {
      await signIn(input.value.trim(), remember.checked);
      if (!location.hash || location.hash === "#") history.replaceState(null, "", "#/chat");
      route();
    } catch (failure) {
      error.textContent = failure.detail || failure.message;
    }
  }
  document.title = "Sign in · famulus";
  clear(app).append(h("main", { class: "center" }, form));
  input.focus();
}

// `#key=…` (the link `famulus serve` prints): sign in with it and take the key
// out of the address bar and the history at once. Also when the link is opened
// in a tab that already shows the client (then only the hash changes).
async function keyFromLink() {
  const match = location.hash.match(/^#key=(.+)$/);
  if (!match) return true;
  history.replaceState(null, "", `${location.pathname}${location.search}#/chat`);
  try {
    await signIn(decodeURIComponent(match[1]), false);
    return true;
  } catch (failure) {
    showSignIn(failure.detail || failure.message);
    return false;
  }
}

async function onHash() {
  if (await keyFromLink()) route();
}

function start() {
  api.onUnauthorized(() => {
    api.forget();
    showSignIn("The key was refused; sign in again.");
  });
  window.addEventListener("hashchange", onHash);
  onHash();
}

start();
