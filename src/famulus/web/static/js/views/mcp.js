// The MCP view: the MCP servers whose tools the agent may use, their status,
// and adding, trusting, switching off or removing one.
//
// A server is a local program famulus starts (stdio: a command and its args)
// or an address it connects to (streamable HTTP). Env and header values are
// secrets: they are sent once, when added, and the API only ever shows their
// names with a masked hint, so that is all this view can show. Tool names and
// descriptions come from the server, so they are only ever put in as text.

import { h, clear, confirmDialog } from "../dom.js";

export const view = { name: "mcp", title: "MCP", mount };

const STATUS_CLASS = { connected: "status-ok", error: "status-error", idle: "status-muted", disabled: "status-muted" };

async function mount(root, ctx) {
  const state = { alive: true };
  const list = h("div", { class: "mcp-list" });
  const load = async () => {
    let servers;
    try {
      servers = (await ctx.api.get("/mcp/servers")).servers;
    } catch (err) {
      ctx.toast(errorText(err), "error");
      return;
    }
    if (!state.alive) return;
    clear(list);
    list.append(
      servers.length
        ? h("ul", { class: "mcp-servers" }, ...servers.map((s) => serverItem(ctx, s, load)))
        : h("p", { class: "mcp-empty muted" }, "No MCP servers yet."),
    );
  };
  root.append(
    h("header", { class: "mcp-head" }, h("h2", {}, "MCP servers")),
    h(
      "p",
      { class: "muted" },
      "Tools of these servers join the agent's tools, named server_tool. " +
        "A server that is not trusted asks before each call.",
    ),
    addForm(ctx, load),
    list,
  );
  await load();
  return () => {
    state.alive = false;
  };
}

function errorText(err) {
  return err && err.detail ? err.detail : String(err && err.message ? err.message : err);
}

function field(label, control, hint) {
  return h(
    "label",
    { class: "field" },
    h("span", { class: "field-label" }, label),
    control,
    hint ? h("span", { class: "field-hint" }, hint) : null,
  );
}

/** "NAME=value" (or "Name: value") lines as an object; blank lines are skipped. */
function pairs(text, separator) {
  const out = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf(separator);
    if (at <= 0) throw new Error(`"${line.trim()}" is not name${separator}value.`);
    out[line.slice(0, at).trim()] = line.slice(at + separator.length).trim();
  }
  return out;
}

function addForm(ctx, reload) {
  const name = h("input", { type: "text", name: "name", placeholder: "files", autocomplete: "off", spellcheck: "false" });
  const transport = h(
    "select",
    { name: "transport" },
    h("option", { value: "stdio" }, "Local program (stdio)"),
    h("option", { value: "http" }, "Address (streamable HTTP)"),
  );
  const command = h("input", { type: "text", name: "command", placeholder: "npx", autocomplete: "off", spellcheck: "false" });
  const args = h("textarea", { name: "args", rows: 2, placeholder: "-y\n@modelcontextprotocol/server-filesystem", spellcheck: "false" });
  const env = h("textarea", { name: "env", rows: 2, placeholder: "API_TOKEN=…", spellcheck: "false" });
  const url = h("input", { type: "text", name: "url", placeholder: "https://example.org/mcp", autocomplete: "off", spellcheck: "false" });
  const headers = h("textarea", { name: "headers", rows: 2, placeholder: "Authorization: Bearer …", spellcheck: "false" });
  const trusted = h("input", { type: "checkbox", name: "trusted" });
  const stdioFields = h(
    "div",
    { class: "mcp-stdio" },
    field("Command", command),
    field("Arguments", args, "One per line."),
    field("Environment", env, "NAME=value per line; values are stored as secrets."),
  );
  const httpFields = h(
    "div",
    { class: "mcp-http", hidden: true },
    field("URL", url),
    field("Headers", headers, "Name: value per line; values are stored as secrets."),
  );
  transport.addEventListener("change", () => {
    stdioFields.hidden = transport.value !== "stdio";
    httpFields.hidden = transport.value !== "http";
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Add server");
  const form = h(
    "form",
    { class: "mcp-add" },
    h("h3", {}, "Add a server"),
    h("div", { class: "mcp-row" }, field("Name", name, "Lowercase; prefixes its tools."), field("Kind", transport)),
    stdioFields,
    httpFields,
    h("label", { class: "check" }, trusted, "Trusted: run its tools without asking"),
    h("div", {}, submit),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let body;
    try {
      body = { name: name.value.trim(), transport: transport.value, trusted: trusted.checked };
      if (transport.value === "stdio") {
        body.command = command.value.trim();
        body.args = args.value.split("\n").map((a) => a.trim()).filter(Boolean);
        body.env = pairs(env.value, "=");
      } else {
        body.url = url.value.trim();
        body.headers = pairs(headers.value, ":");
      }
    } catch (err) {
      ctx.toast(err.message, "error");
      return;
    }
    submit.disabled = true;
    try {
      await ctx.api.post("/mcp/servers", body);
      ctx.toast(`Added ${body.name}.`, "info");
      for (const el of [name, command, args, env, url, headers]) el.value = "";
      trusted.checked = false;
      await reload();
    } catch (err) {
      ctx.toast(errorText(err), "error");
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function serverItem(ctx, server, reload) {
  const path = `/mcp/servers/${encodeURIComponent(server.name)}`;
  const tools = h("div", { class: "mcp-tools" });
  const toggle = (key, label) => {
    const box = h("input", { type: "checkbox", name: key, class: `mcp-${key}` });
    box.checked = Boolean(server[key]);
    box.addEventListener("change", async () => {
      box.disabled = true;
      try {
        await ctx.api.patch(path, { [key]: box.checked });
        await reload();
      } catch (err) {
        box.checked = !box.checked;
        box.disabled = false;
        ctx.toast(errorText(err), "error");
      }
    });
    return h("label", { class: "check" }, box, label);
  };
  const secretNames = [...Object.keys(server.env), ...Object.keys(server.headers)];
  const count = server.tool_count === null ? null : `${server.tool_count} tools`;
  return h(
    "li",
    { class: "mcp-server", dataset: { name: server.name } },
    h(
      "div",
      { class: "mcp-title" },
      h("strong", { class: "mcp-name" }, server.name),
      h("span", { class: "badge" }, server.transport),
      h("span", { class: `badge mcp-status ${STATUS_CLASS[server.status] || ""}` }, server.status),
      count ? h("span", { class: "muted mcp-count" }, count) : null,
    ),
    h("code", { class: "mcp-target" }, server.url || [server.command, ...server.args].join(" ")),
    secretNames.length ? h("div", { class: "muted" }, `Secrets: ${secretNames.join(", ")}`) : null,
    server.last_error ? h("div", { class: "mcp-error" }, server.last_error) : null,
    h(
      "div",
      { class: "mcp-actions" },
      toggle("trusted", "Trusted"),
      toggle("enabled", "Enabled"),
      h("button", { type: "button", class: "mcp-show-tools", on: { click: () => showTools(ctx, path, tools) } }, "Show tools"),
      h("button", { type: "button", class: "danger mcp-remove", on: { click: () => remove(ctx, server, path, reload) } }, "Remove"),
    ),
    tools,
  );
}

// Listing the tools starts the server if need be, so its badge is brought up to date too.
async function showTools(ctx, path, target) {
  clear(target).append(h("p", { class: "muted" }, "Connecting…"));
  const badge = target.closest(".mcp-server")?.querySelector(".mcp-status");
  let found;
  try {
    found = (await ctx.api.get(`${path}/tools`)).tools;
  } catch (err) {
    clear(target).append(h("p", { class: "mcp-error" }, errorText(err)));
    setStatus(badge, "error");
    return;
  }
  setStatus(badge, "connected");
  clear(target).append(
    found.length
      ? h(
          "ul",
          { class: "mcp-tool-list" },
          ...found.map((t) =>
            h(
              "li",
              { class: "mcp-tool", dataset: { name: t.agent_name } },
              h("code", {}, t.agent_name),
              t.read_only ? h("span", { class: "badge" }, "read-only") : null,
              t.description ? h("div", { class: "muted" }, t.description) : null,
            ),
          ),
        )
      : h("p", { class: "muted" }, "This server offers no tools."),
  );
}

function setStatus(badge, status) {
  if (!badge) return;
  badge.className = `badge mcp-status ${STATUS_CLASS[status]}`;
  badge.textContent = status;
}

async function remove(ctx, server, path, reload) {
  if (!(await confirmDialog(`Remove the MCP server ${server.name}? Its stored secrets are deleted.`, "Remove"))) return;
  try {
    await ctx.api.del(path);
    ctx.toast(`Removed ${server.name}.`, "info");
    await reload();
  } catch (err) {
    ctx.toast(errorText(err), "error");
  }
}
