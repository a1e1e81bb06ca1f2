// Chat: the sessions sidebar and one session's transcript.
//
// History comes from GET /session/history; the live stream
// (GET /chat/events/{id}?stream=true) follows without a cursor, so the server
// sends only the run still in progress and what happens next. What that
// replay repeats from history (tool calls, texts) is recognised and skipped;
// after a drop, api.stream reconnects with Last-Event-ID, and event ids
// already drawn are skipped, so nothing shows twice.

import { clear, confirmDialog, h, markdown, when } from "../dom.js";

export const view = { name: "chat", title: "Chat", mount };

const HISTORY_CHUNK = 120; // messages drawn at once; earlier ones on request
const SESSIONS_POLL_MS = 20000; // the sidebar looks for sessions made elsewhere

async function mount(root, ctx) {
  const sid = ctx.params[0];
  if (!sid) {
    const current = await ctx.api.get("/session");
    ctx.navigate(`#/chat/${encodeURIComponent(current.session_id)}`, true);
    return undefined;
  }
  const chat = new ChatView(root, ctx, sid);
  await chat.start();
  return () => chat.stop();
}

function pretty(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

// An image as the API takes it: base64 without the data: prefix.
function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

// A data: URL for an image from history, only for the four image types and
// plain base64 (img-src allows data:, and an <img> never runs script).
function imageSource(image) {
  if (!image || typeof image !== "object") return null;
  const { media_type: type, data } = image;
  if (!IMAGE_TYPES.includes(type) || typeof data !== "string" || !/^[A-Za-z0-9+/=\s]*$/.test(data)) return null;
  return `data:${type};base64,${data.replace(/\s/g, "")}`;
}

// A button's label in full, and the short one a phone-size screen shows instead.
function labels(full, short) {
  return [h("span", { class: "label-full" }, full), h("span", { class: "label-short" }, short)];
}

function asText(content) {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  return JSON.stringify(content);
}

class ChatView {
  constructor(root, ctx, sid) {
    this.root = root;
    this.ctx = ctx;
    this.api = ctx.api;
    this.sid = sid;
    this.abort = new AbortController();
    this.running = null; // run id of the foreground run
    this.lastId = 0; // highest event id drawn
    this.tools = new Map(); // tool_id -> {el, nested, result, done}
    this.streams = new Map(); // "depth:parent" -> {el, text, frame}
    this.approvals = new Map(); // tool_id -> approval card
    this.queued = new Map(); // client_id -> {badge, bubble}
    this.replayTexts = []; // assistant texts of the last turn in history
    this.skills = null;
    this.attachments = []; // {media_type, data, url} waiting to be sent
    this.offline = false; // the stream dropped and is reconnecting
    this.showArchived = false;
    this.gone = new Set(); // ids of reverted messages already drawn away
    this.redrawing = null; // the redraw after a revert, while it runs
    this.finished = new Set(); // run ids whose end was seen
    this.settled = new Set(); // client ids taken in or withdrawn (the event may beat the answer)
    this.onKey = (event) => this.globalKey(event);
    this.drawnSessions = ""; // what the sidebar shows, to skip redrawing the same
    this.onReturn = () => this.refreshSessions();
    this.sessionsTimer = 0;
  }

  // ---- layout --------------------------------------------------------------

  async start() {
    this.build();
    document.addEventListener("keydown", this.onKey);
    // Sessions made in another tab or through the API show up when the person
    // comes back to this tab, and every SESSIONS_POLL_MS while it is shown.
    document.addEventListener("visibilitychange", this.onReturn);
    window.addEventListener("focus", this.onReturn);
    this.sessionsTimer = setInterval(this.onReturn, SESSIONS_POLL_MS);
    await Promise.all([this.loadSessions(), this.loadSession(), this.loadHistory(), this.checkModel()]);
    this.connect();
    this.loadContext();
    this.input.focus();
  }

  stop() {
    this.abort.abort();
    document.removeEventListener("keydown", this.onKey);
    document.removeEventListener("visibilitychange", this.onReturn);
    window.removeEventListener("focus", this.onReturn);
    clearInterval(this.sessionsTimer);
    for (const entry of this.streams.values()) cancelAnimationFrame(entry.frame);
  }

  build() {
    this.list = h("ul", { class: "session-list" });
    this.archivedToggle = h(
      "button",
      { type: "button", id: "toggle-archived", on: { click: () => this.toggleArchived() } },
      "Archived",
    );
    const sidebar = h(
      "aside",
      { class: "sessions" },
      h(
        "header",
        {},
        h("button", { type: "button", id: "new-session", class: "primary", on: { click: () => this.newSession() } }, "New"),
        this.archivedToggle,
      ),
      this.list,
    );
    this.title = h("h2", { id: "session-name" }, "");
    this.archivedNote = h("span", { class: "archived-note hidden" }, "archived");
    this.meterBar = h("progress", { id: "context-bar", max: 1, value: 0 });
    this.meterText = h("span", { id: "context-text" }, "");
    this.actions = h("div", { class: "row" });
    const head = h(
      "div",
      { class: "chat-head" },
      this.title,
      this.archivedNote,
      h(
        "div",
        { class: "meter", title: "Context: tokens the next request would send" },
        this.meterBar,
        this.meterText,
        h("button", { type: "button", id: "compact", class: "link", on: { click: () => this.compact() } }, "Compact"),
      ),
      this.actions,
    );
    this.transcript = h("div", { class: "transcript", id: "transcript", "aria-live": "polite" });
    this.status = h("div", { class: "status-line", id: "run-status" });
    this.input = h("textarea", {
      id: "message",
      rows: 2,
      placeholder: "Message famulus — Enter sends, Shift+Enter new line, / for skills",
      on: { keydown: (e) => this.composerKey(e), input: () => this.updateCompletion() },
    });
    this.completion = h("ul", { class: "completion hidden", id: "skill-completion", role: "listbox" });
    this.cancelButton = h(
      "button",
      { type: "button", id: "cancel", disabled: true, on: { click: () => this.cancel() } },
      "Cancel",
    );
    this.backgroundButton = h(
      "button",
      { type: "button", id: "background", disabled: true, on: { click: () => this.background() } },
      labels("Background", "Bg"),
    );
    this.undoButton = h(
      "button",
      { type: "button", id: "undo", title: "Remove the last turn and put its message back here", on: { click: () => this.undo() } },
      labels("Undo last turn", "Undo"),
    );
    this.retryButton = h(
      "button",
      { type: "button", id: "retry", title: "Ask the last message again", on: { click: () => this.retry() } },
      "Retry",
    );
    this.connectPrompt = h(
      "div",
      { class: "connect-model hidden", id: "connect-model", role: "status" },
      h("strong", {}, "No chat model is connected yet."),
      " famulus needs one to answer. ",
      h("a", { href: "#/settings/providers", id: "connect-model-link" }, "Connect a model"),
      h("small", { class: "muted" }, "Add a provider's API key (or a custom OpenAI-compatible server) in Settings."),
    );
    this.fileInput = h("input", {
      type: "file",
      id: "attach-input",
      class: "hidden",
      multiple: true,
      accept: IMAGE_TYPES.join(","),
      on: { change: () => this.attachFiles(this.fileInput.files) },
    });
    this.thumbs = h("div", { class: "thumbs", id: "attachments" });
    this.input.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData?.files || [])];
      if (files.length) {
        event.preventDefault();
        this.attachFiles(files);
      }
    });
    const composer = h(
      "div",
      { class: "composer" },
      this.completion,
      this.thumbs,
      this.input,
      h(
        "div",
        { class: "row composer-actions" },
        this.fileInput,
        h(
          "div",
          { class: "composer-extra" },
          h(
            "button",
            { type: "button", id: "attach", class: "attach", title: "Attach images", on: { click: () => this.fileInput.click() } },
            "Attach",
          ),
          this.undoButton,
          this.retryButton,
          this.cancelButton,
          this.backgroundButton,
        ),
        h("button", { type: "button", id: "send", class: "primary", on: { click: () => this.send() } }, "Send"),
      ),
    );
    this.root.append(
      sidebar,
      h("div", { class: "chat" }, head, this.connectPrompt, this.transcript, this.status, composer),
    );
  }

  fail(error) {
    if (this.abort.signal.aborted) return;
    this.ctx.toast(error.detail || error.message || String(error), "error");
  }

  // ---- sessions ------------------------------------------------------------

  async loadSessions() {
    try {
      const path = this.showArchived ? "/sessions/archived" : "/sessions";
      const { sessions } = await this.api.get(path, this.showArchived ? { limit: 200 } : undefined);
      this.drawSessions(sessions);
    } catch (error) {
      this.fail(error);
    }
  }

  refreshSessions() {
    if (document.visibilityState === "visible" && !this.abort.signal.aborted) this.loadSessions();
  }

  drawSessions(sessions) {
    // Unchanged (as shown, relative times included): leave the list, its
    // scroll position and focus alone.
    const shown = JSON.stringify([
      this.showArchived,
      sessions.map((s) => [s.session_id, s.name, when(s.last_activity), s.message_count]),
    ]);
    if (shown === this.drawnSessions) return;
    this.drawnSessions = shown;
    clear(this.list);
    this.archivedToggle.textContent = this.showArchived ? "Active" : "Archived";
    if (!sessions.length) {
      this.list.append(h("li", { class: "muted" }, this.showArchived ? "No archived sessions." : "No sessions."));
    }
    for (const s of sessions) {
      this.list.append(
        h(
          "li",
          {},
          h(
            "a",
            {
              href: `#/chat/${encodeURIComponent(s.session_id)}`,
              class: s.session_id === this.sid ? "active" : "",
              dataset: { sid: s.session_id },
            },
            s.name,
            h("small", {}, `${when(s.last_activity)} · ${s.message_count} messages`),
          ),
        ),
      );
    }
  }

  toggleArchived() {
    this.showArchived = !this.showArchived;
    this.loadSessions();
  }

  async newSession() {
    try {
      const created = await this.api.post("/sessions", {});
      this.ctx.navigate(`#/chat/${encodeURIComponent(created.session_id)}`);
    } catch (error) {
      this.fail(error);
    }
  }

  async loadSession() {
    try {
      const [session, archived] = await Promise.all([
        this.api.get("/session", { session_id: this.sid }),
        this.api.get("/sessions/archived", { limit: 200, origin: "all" }),
      ]);
      this.name = session.name;
      this.archived = archived.sessions.some((s) => s.session_id === this.sid);
      this.drawHead();
    } catch (error) {
      this.fail(error);
    }
  }

  drawHead() {
    this.title.textContent = this.name || "";
    this.archivedNote.classList.toggle("hidden", !this.archived);
    clear(this.actions).append(
      h("button", { type: "button", id: "rename", on: { click: () => this.rename() } }, "Rename"),
      this.archived
        ? h("button", { type: "button", id: "restore", on: { click: () => this.restore() } }, "Restore")
        : h("button", { type: "button", id: "archive", on: { click: () => this.archive() } }, "Archive"),
      h("button", { type: "button", id: "delete", class: "danger", on: { click: () => this.remove() } }, "Delete"),
    );
  }

  rename() {
    const field = h("input", { type: "text", id: "rename-input", value: this.name || "", maxlength: 200 });
    const finish = async (save) => {
      field.replaceWith(this.title);
      if (!save || !field.value.trim() || field.value.trim() === this.name) return;
      try {
        const item = await this.api.patch(`/sessions/${encodeURIComponent(this.sid)}`, { name: field.value.trim() });
        this.name = item.name;
        this.drawHead();
        this.loadSessions();
      } catch (error) {
        this.fail(error);
      }
    };
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        finish(false);
      }
    });
    field.addEventListener("blur", () => field.isConnected && finish(true));
    this.title.replaceWith(field);
    field.focus();
    field.select();
  }

  async archive() {
    try {
      await this.api.del(`/sessions/${encodeURIComponent(this.sid)}`);
      this.archived = true;
      this.drawHead();
      this.loadSessions();
      this.ctx.toast("Session archived.");
    } catch (error) {
      this.fail(error);
    }
  }

  async restore() {
    try {
      await this.api.post(`/sessions/${encodeURIComponent(this.sid)}/restore`);
      this.archived = false;
      this.drawHead();
      this.loadSessions();
      this.ctx.toast("Session restored.");
    } catch (error) {
      this.fail(error);
    }
  }

  async remove() {
    const ok = await confirmDialog(
      `Delete "${this.name}" for good? Its history and events are removed; this cannot be undone.`,
      "Delete for good",
    );
    if (!ok) return;
    try {
      await this.api.del(`/sessions/${encodeURIComponent(this.sid)}/permanent`);
      this.ctx.toast("Session deleted.");
      this.ctx.navigate("#/chat");
    } catch (error) {
      this.fail(error);
    }
  }

  // ---- history -------------------------------------------------------------

  async loadHistory() {
    let messages;
    try {
      ({ messages } = await this.api.get("/session/history", { session_id: this.sid }));
    } catch (error) {
      this.fail(error);
      return;
    }
    this.history = messages;
    let start = Math.max(0, messages.length - HISTORY_CHUNK);
    while (start > 0 && messages[start].role !== "user") start -= 1;
    this.drawMessages(messages.slice(start), this.transcript);
    this.earlierEnd = start;
    this.drawEarlierButton();
    // The texts of the last turn may come again when a run is still going.
    const lastUser = messages.map((m) => m.role).lastIndexOf("user");
    this.replayTexts = messages
      .slice(lastUser + 1)
      .filter((m) => m.role === "assistant" && m.content)
      .map((m) => asText(m.content));
    this.scrollToEnd(true);
  }

  drawEarlierButton() {
    this.earlierButton?.remove();
    if (this.earlierEnd <= 0) return;
    this.earlierButton = h(
      "button",
      { type: "button", class: "link", id: "show-earlier", on: { click: () => this.showEarlier() } },
      `Show ${this.earlierEnd} earlier messages`,
    );
    this.transcript.prepend(this.earlierButton);
  }

  showEarlier() {
    const end = this.earlierEnd;
    let start = Math.max(0, end - HISTORY_CHUNK);
    while (start > 0 && this.history[start].role !== "user") start -= 1;
    const holder = document.createDocumentFragment();
    const before = this.transcript.scrollHeight;
    this.drawMessages(this.history.slice(start, end), holder);
    this.earlierButton.after(holder);
    this.earlierEnd = start;
    this.drawEarlierButton();
    this.transcript.scrollTop += this.transcript.scrollHeight - before;
  }

  drawMessages(messages, into) {
    for (const m of messages) {
      if (m.role === "user") {
        const bubble = this.userBubble(asText(m.content), m.created_at, m.images || []);
        into.append(bubble);
        this.tag(bubble, m.id);
      } else if (m.role === "assistant") {
        if (m.content) {
          const bubble = this.assistantBubble(asText(m.content));
          into.append(bubble);
          this.tag(bubble, m.id);
        }
        for (const call of m.tool_calls || []) into.append(this.toolItem(call.id, call.name, call.arguments, ""));
      } else if (m.role === "tool") {
        const tool = this.tools.get(m.tool_call_id);
        if (tool) this.setResult(tool, asText(m.content), false, null);
      }
    }
  }

  // A message whose history id is known gets its id and a "Branch from here"
  // action right after it (outside the bubble, so the bubble's text stays the
  // message's text).
  tag(el, id) {
    if (id === undefined || id === null || el.dataset.id) return;
    el.dataset.id = String(id);
    const side = el.classList.contains("user") ? "user" : "assistant";
    el.after(
      h(
        "div",
        { class: ["msg-actions", side], dataset: { for: String(id) } },
        h(
          "button",
          { type: "button", class: "link branch", title: "A new session with the conversation up to here", on: { click: () => this.branch(id) } },
          "Branch from here",
        ),
      ),
    );
  }

  // After a run, the messages drawn live get the ids history gave them: the
  // untagged bubbles of each role, in order, pair with the newer history rows.
  async syncIds() {
    let messages;
    try {
      ({ messages } = await this.api.get("/session/history", { session_id: this.sid }));
    } catch {
      return; // the ids come with the next run or reload
    }
    if (this.abort.signal.aborted) return;
    this.history = messages;
    const drawn = [...this.transcript.querySelectorAll(":scope > .msg[data-id]")].map((e) => Number(e.dataset.id));
    const known = Math.max(0, ...drawn);
    const fresh = messages.filter((m) => m.id > known);
    const pair = (selector, rows) => {
      const els = [...this.transcript.querySelectorAll(selector)].filter((e) => !e.dataset.id);
      els.forEach((el, i) => rows[i] && this.tag(el, rows[i].id));
    };
    pair(":scope > .msg.user:not(.pending)", fresh.filter((m) => m.role === "user"));
    pair(":scope > .msg.assistant:not(.streaming)", fresh.filter((m) => m.role === "assistant" && m.content));
  }

  // Draws the transcript again from history (after a revert: tool calls and
  // texts of the removed turns go with their messages).
  async redraw() {
    for (const entry of this.streams.values()) cancelAnimationFrame(entry.frame);
    this.streams.clear();
    this.tools.clear();
    this.approvals.clear();
    this.earlierButton = null;
    clear(this.transcript);
    await this.loadHistory();
  }

  userBubble(text, createdAt, images = []) {
    const pictures = images.map(imageSource).filter(Boolean);
    return h(
      "div",
      { class: "msg user", title: when(createdAt) },
      pictures.length ? h("div", { class: "thumbs" }, pictures.map((src) => h("img", { src, alt: "attached image" }))) : null,
      text,
    );
  }

  // ---- attachments ---------------------------------------------------------

  async attachFiles(files) {
    for (const file of files) {
      if (!IMAGE_TYPES.includes(file.type)) {
        this.ctx.toast(`${file.name}: only PNG, JPEG, GIF and WebP images can be attached.`, "error");
        continue;
      }
      if (this.attachments.length >= 20) {
        this.ctx.toast("At most 20 images per message.", "error");
        break;
      }
      const data = await base64(file);
      this.attachments.push({ media_type: file.type, data, url: URL.createObjectURL(file) });
    }
    this.fileInput.value = "";
    this.drawAttachments();
  }

  drawAttachments() {
    clear(this.thumbs);
    for (const item of this.attachments) {
      this.thumbs.append(
        h(
          "span",
          { class: "thumb" },
          h("img", { src: item.url, alt: "image to send" }),
          h(
            "button",
            { type: "button", class: "link remove", title: "Remove", on: { click: () => this.detach(item) } },
            "×",
          ),
        ),
      );
    }
  }

  detach(item) {
    URL.revokeObjectURL(item.url);
    this.attachments = this.attachments.filter((a) => a !== item);
    this.drawAttachments();
  }

  assistantBubble(text) {
    const el = h("div", { class: "msg assistant" });
    el.append(markdown(text));
    return el;
  }

  toolItem(id, name, args, description) {
    const summary = h("summary", {}, h("span", { class: "tool-name" }, name), description ? ` — ${description}` : "");
    const nested = h("div", { class: "nested hidden" });
    const result = h("pre", { class: "tool-result hidden" });
    const el = h(
      "details",
      { class: "tool", dataset: { toolId: id } },
      summary,
      h("div", { class: "muted" }, "Arguments"),
      h("pre", { class: "tool-args" }, pretty(args ?? {})),
      nested,
      result,
    );
    this.tools.set(id, { el, summary, nested, result, done: false });
    return el;
  }

  setResult(tool, text, error, durationMs) {
    tool.done = true;
    tool.result.textContent = text;
    tool.result.classList.remove("hidden");
    tool.el.classList.toggle("failed", Boolean(error));
    const note = [error ? "failed" : "done", durationMs != null ? `${durationMs} ms` : ""].filter(Boolean).join(", ");
    tool.summary.append(h("span", { class: "muted tool-state" }, ` (${note})`));
  }

  // ---- live events ---------------------------------------------------------

  connect() {
    this.api
      .stream(`/chat/events/${encodeURIComponent(this.sid)}?stream=true`, {
        signal: this.abort.signal,
        onEvent: (type, data, id) => this.event(type, data, id),
        onDrop: () => this.dropped(),
        onOpen: () => this.reconnected(),
      })
      .catch((error) => this.fail(error));
  }

  dropped() {
    // Half-streamed blocks stay; their complete `text` event comes on reconnect.
    if (this.abort.signal.aborted) return;
    this.offline = true;
    this.status.textContent = "Reconnecting…";
  }

  reconnected() {
    if (!this.offline) return;
    this.offline = false;
    this.status.textContent = this.running ? "Working…" : "";
  }

  event(type, data, id) {
    if (id) {
      const n = Number(id);
      if (n <= this.lastId) return;
      this.lastId = n;
    }
    const near = this.nearEnd();
    const handler = HANDLERS[type];
    if (handler) handler.call(this, data);
    this.scrollToEnd(near);
  }

  container(data) {
    if (data.parent_id && this.tools.has(data.parent_id)) {
      const { nested } = this.tools.get(data.parent_id);
      nested.classList.remove("hidden");
      return nested;
    }
    return this.transcript;
  }

  setRunning(runId) {
    this.running = runId;
    this.cancelButton.disabled = !runId;
    this.backgroundButton.disabled = !runId;
    this.undoButton.disabled = Boolean(runId);
    this.retryButton.disabled = Boolean(runId);
    if (!runId) this.status.textContent = "";
  }

  notice(text, kind = "") {
    this.transcript.append(h("div", { class: ["notice", kind] }, text));
  }

  delta(data) {
    const key = `${data.depth || 0}:${data.parent_id || ""}`;
    let entry = this.streams.get(key);
    if (!entry) {
      entry = { el: h("div", { class: "msg assistant streaming" }), text: "", frame: 0 };
      this.streams.set(key, entry);
      this.container(data).append(entry.el);
    }
    entry.text += data.content;
    if (!entry.frame) {
      entry.frame = requestAnimationFrame(() => {
        entry.frame = 0;
        clear(entry.el).append(markdown(entry.text));
      });
    }
  }

  text(data) {
    const key = `${data.depth || 0}:${data.parent_id || ""}`;
    const entry = this.streams.get(key);
    if (entry) {
      cancelAnimationFrame(entry.frame);
      this.streams.delete(key);
      entry.el.classList.remove("streaming");
      clear(entry.el).append(markdown(data.content));
      return;
    }
    const seen = this.replayTexts.indexOf(data.content);
    if (!data.depth && seen >= 0) {
      this.replayTexts.splice(seen, 1); // already drawn from history
      return;
    }
    this.container(data).append(this.assistantBubble(data.content));
  }

  toolCall(data) {
    if (this.tools.has(data.tool_id)) return;
    this.container(data).append(this.toolItem(data.tool_id, data.name, data.args, data.description));
  }

  toolResult(data) {
    const tool = this.tools.get(data.tool_id);
    this.approvals.get(data.tool_id)?.settle(data.error ? "Denied" : "Approved", false);
    if (!tool || tool.done) return;
    this.setResult(tool, asText(data.result ?? data.preview), data.error, data.duration_ms);
  }

  approval(data) {
    if (this.approvals.has(data.tool_id)) return;
    const note = h("input", { type: "text", class: "note", placeholder: "Note for the model (optional, sent with Deny)" });
    const buttons = h("div", { class: "row" });
    const card = h(
      "div",
      { class: "approval", dataset: { toolId: data.tool_id } },
      h("strong", {}, `Approve ${data.name}?`),
      data.description ? h("div", {}, data.description) : null,
      h("pre", {}, pretty(data.args ?? {})),
      buttons,
    );
    let settled = false;
    const settle = (text, fromHere = true) => {
      if (settled && !fromHere) return; // the answer given here stays shown
      settled = true;
      clear(buttons).append(h("span", { class: "muted approval-state" }, text));
    };
    const answer = async (approved) => {
      for (const b of buttons.querySelectorAll("button")) b.disabled = true;
      const body = { run_id: data.run_id, tool_id: data.tool_id, approved };
      if (!approved && note.value.trim()) body.result = note.value.trim();
      try {
        const r = await this.api.post("/tools/result", body);
        settle(r.status === "approved" ? "Approved" : "Denied");
      } catch (error) {
        this.fail(error);
        for (const b of buttons.querySelectorAll("button")) b.disabled = false;
      }
    };
    buttons.append(
      note,
      h("button", { type: "button", class: "primary approve", on: { click: () => answer(true) } }, "Approve"),
      h("button", { type: "button", class: "danger deny", on: { click: () => answer(false) } }, "Deny"),
    );
    this.approvals.set(data.tool_id, { settle });
    this.transcript.append(card);
  }

  ended(data, text, kind) {
    for (const entry of this.streams.values()) entry.el.classList.remove("streaming");
    if (text) this.notice(text, kind);
    if (data.run_id) this.finished.add(data.run_id);
    if (data.run_id === this.running) this.setRunning(null);
    this.loadContext();
    this.loadSessions(); // message counts and order changed
    this.syncIds();
  }

  // ---- sending -------------------------------------------------------------

  async send() {
    const text = this.input.value;
    const images = this.attachments;
    if (!text.trim() && !images.length) return;
    this.closeCompletion();
    this.input.value = "";
    if (await this.submit(text, images)) {
      this.attachments = [];
      this.drawAttachments();
      for (const item of images) if (item.url?.startsWith("blob:")) URL.revokeObjectURL(item.url);
    } else if (!this.input.value) {
      this.input.value = text;
    }
  }

  // Posts one message (with a client_id, so a queued one can be withdrawn)
  // and draws it; false when the server refused it.
  async submit(text, images) {
    const clientId = `c_${crypto.randomUUID()}`;
    const body = { message: text, session_id: this.sid, client_id: clientId };
    if (images.length) body.images = images.map(({ media_type, data }) => ({ media_type, data }));
    // Drawn at once (the run's events may come before the answer), taken
    // away again if the server refuses the message.
    const bubble = this.userBubble(text, new Date().toISOString(), images);
    this.transcript.append(bubble);
    this.replayTexts = [];
    this.scrollToEnd(true);
    let r;
    try {
      r = await this.api.post("/chat/message", body);
    } catch (error) {
      bubble.remove();
      if (error.code === "not_configured" && error.status === 503) this.showConnect(true);
      else this.fail(error);
      return false;
    }
    this.showConnect(false);
    if (r.queued && !this.settled.has(clientId)) {
      const badge = h(
        "span",
        { class: "badge queued" },
        "queued",
        h("button", { type: "button", class: "link withdraw", on: { click: () => this.withdraw(clientId) } }, "Withdraw"),
      );
      bubble.classList.add("pending");
      bubble.append(badge);
      this.queued.set(clientId, { badge, bubble });
    } else if (!r.queued && !this.finished.has(r.run_id)) {
      this.setRunning(r.run_id); // unless its events were faster than the answer
    }
    return true;
  }

  // ---- withdraw, undo, retry, branch ----------------------------------------

  async withdraw(clientId) {
    const entry = this.queued.get(clientId);
    if (!entry) return;
    const button = entry.badge.querySelector("button");
    if (button) button.disabled = true;
    const path = `/chat/queue/${encodeURIComponent(clientId)}?session_id=${encodeURIComponent(this.sid)}`;
    try {
      const r = await this.api.del(path);
      this.unqueue(clientId, true);
      this.putBack(r.message, r.images);
    } catch (error) {
      if (error.status === 409) {
        button?.remove();
        this.ctx.toast("Too late: the run already took that message in. Undo the turn once the run has finished.", "error");
      } else {
        if (button) button.disabled = false;
        this.fail(error);
      }
    }
  }

  // A queued message leaves the queue: taken in (its bubble stays, without
  // the badge) or withdrawn (the bubble goes).
  unqueue(clientId, withdrawn) {
    if (clientId) this.settled.add(clientId);
    const entry = this.queued.get(clientId);
    if (!entry) return;
    this.queued.delete(clientId);
    if (withdrawn) {
      entry.bubble.remove();
    } else {
      entry.badge.remove();
      entry.bubble.classList.remove("pending");
    }
  }

  // Text (and images) back into the composer, before whatever is typed there.
  putBack(text, images) {
    const typed = this.input.value;
    this.input.value = typed.trim() ? `${text}\n\n${typed}` : text || "";
    for (const image of images || []) {
      const url = imageSource(image);
      if (url) this.attachments.push({ media_type: image.media_type, data: image.data, url });
    }
    this.drawAttachments();
    this.input.focus();
  }

  // Removes the last turn; the view follows through the answer (and, in other
  // tabs, through the session_reverted event). null when refused.
  async revert() {
    let r;
    try {
      r = await this.api.post(`/sessions/${encodeURIComponent(this.sid)}/revert`, { turns: 1 });
    } catch (error) {
      this.fail(error);
      return null;
    }
    await this.reverted(r.removed.map((m) => m.id));
    this.loadContext();
    this.loadSessions();
    return r;
  }

  async reverted(ids) {
    const fresh = ids.filter((id) => !this.gone.has(id));
    if (fresh.length) {
      for (const id of fresh) this.gone.add(id);
      this.redrawing = this.redraw();
    }
    await this.redrawing; // the event and the answer both wait for one redraw
  }

  async undo() {
    const r = await this.revert();
    if (r) this.putBack(r.text, r.images);
  }

  async retry() {
    const r = await this.revert();
    if (r && !(await this.submit(r.text, r.images || []))) this.putBack(r.text, r.images);
  }

  async branch(messageId) {
    try {
      const created = await this.api.post(`/sessions/${encodeURIComponent(this.sid)}/branch`, { message_id: messageId });
      this.ctx.toast(`Branched into "${created.name}".`);
      this.ctx.navigate(`#/chat/${encodeURIComponent(created.session_id)}`);
    } catch (error) {
      this.fail(error);
    }
  }

  // ---- first run -----------------------------------------------------------

  async checkModel() {
    try {
      const config = await this.api.get("/config");
      this.showConnect(!config.chat_model);
    } catch (error) {
      this.fail(error);
    }
  }

  showConnect(show) {
    this.connectPrompt.classList.toggle("hidden", !show);
  }

  async cancel() {
    try {
      const r = await this.api.post("/cancel", this.running ? { run_id: this.running } : { session_id: this.sid });
      if (r.status === "idle") this.setRunning(null);
    } catch (error) {
      this.fail(error);
    }
  }

  async background() {
    if (!this.running) return;
    try {
      await this.api.post("/chat/background", { run_id: this.running });
    } catch (error) {
      this.fail(error);
    }
  }

  composerKey(event) {
    if (!this.completion.classList.contains("hidden") && this.completionKey(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
    }
  }

  globalKey(event) {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    if (document.querySelector("dialog[open]")) return;
    if (!this.completion.classList.contains("hidden")) {
      this.closeCompletion();
      return;
    }
    if (this.running) {
      event.preventDefault();
      this.cancel();
    }
  }

  // ---- "/" skill completion ------------------------------------------------

  async updateCompletion() {
    const match = this.input.value.match(/^\/([\w-]*)$/);
    if (!match) return this.closeCompletion();
    if (this.skills === null) {
      this.skills = [];
      try {
        this.skills = (await this.api.get("/skills")).skills;
      } catch (error) {
        this.fail(error);
      }
    }
    const prefix = match[1].toLowerCase();
    const found = this.skills.filter((s) => s.name.toLowerCase().startsWith(prefix));
    clear(this.completion);
    if (!found.length || this.input.value.match(/^\/([\w-]*)$/) === null) return this.closeCompletion();
    this.selected = 0;
    for (const [i, skill] of found.entries()) {
      this.completion.append(
        h(
          "li",
          {
            role: "option",
            class: i === 0 ? "selected" : "",
            dataset: { name: skill.name },
            on: { mousedown: (e) => (e.preventDefault(), this.chooseSkill(skill.name)) },
          },
          `/${skill.name}`,
          h("small", {}, skill.description || ""),
        ),
      );
    }
    this.completion.classList.remove("hidden");
  }

  completionKey(event) {
    const items = [...this.completion.children];
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      items[this.selected]?.classList.remove("selected");
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.selected = (this.selected + step + items.length) % items.length;
      items[this.selected].classList.add("selected");
      items[this.selected].scrollIntoView({ block: "nearest" });
      return true;
    }
    if (event.key === "Enter" || event.key === "Tab") {
      event.preventDefault();
      this.chooseSkill(items[this.selected].dataset.name);
      return true;
    }
    if (event.key === "Escape") {
      event.preventDefault();
      this.closeCompletion();
      return true;
    }
    return false;
  }

  chooseSkill(name) {
    this.input.value = `/${name} `;
    this.closeCompletion();
    this.input.focus();
  }

  closeCompletion() {
    this.completion.classList.add("hidden");
  }

  // ---- context -------------------------------------------------------------

  async loadContext() {
    try {
      const c = await this.api.get("/context", { session_id: this.sid });
      this.meterBar.max = c.limit || 1;
      this.meterBar.value = c.limit ? Math.min(c.total, c.limit) : 0;
      this.meterText.textContent = c.limit
        ? `${c.total.toLocaleString()} / ${c.limit.toLocaleString()} tokens`
        : `${c.total.toLocaleString()} tokens`;
    } catch (error) {
      this.fail(error);
    }
  }

  async compact() {
    try {
      const r = await this.api.post("/compact", { session_id: this.sid });
      this.ctx.toast(r.message || (r.status === "compacted" ? "Compacted." : "Nothing to compact."));
      this.loadContext();
    } catch (error) {
      this.fail(error);
    }
  }

  // ---- scrolling -----------------------------------------------------------

  nearEnd() {
    const t = this.transcript;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 80;
  }

  scrollToEnd(force) {
    if (force) this.transcript.scrollTop = this.transcript.scrollHeight;
  }
}

const HANDLERS = {
  run_started(data) {
    this.setRunning(data.run_id);
    this.status.textContent = "Working…";
  },
  message_ingested(data) {
    this.unqueue(data.client_id, false);
  },
  message_withdrawn(data) {
    this.unqueue(data.client_id, true);
  },
  session_reverted(data) {
    this.reverted(data.message_ids || []);
  },
  thinking(data) {
    this.status.textContent = data.status || "Thinking…";
  },
  reasoning(data) {
    this.container(data).append(
      h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"), h("div", {}, markdown(data.content))),
    );
  },
  text_delta(data) {
    this.delta(data);
  },
  text(data) {
    this.text(data);
  },
  tool_call(data) {
    this.toolCall(data);
  },
  tool_result(data) {
    this.toolResult(data);
  },
  approval_needed(data) {
    this.approval(data);
  },
  background_task(data) {
    this.notice(`Background task ${data.status}: ${data.command || ""}`, data.status === "failed" ? "error" : "");
  },
  run_backgrounded(data) {
    this.notice("Sent to the background; the result will arrive here.");
    if (data.run_id === this.running) this.setRunning(null);
  },
  compacted(data) {
    this.notice(`Context compacted: ${data.before_tokens} → ${data.after_tokens} tokens.`);
    this.loadContext();
  },
  run_finished(data) {
    this.ended(data, "", "");
  },
  run_error(data) {
    this.ended(data, data.message || "The run failed.", "error");
  },
  run_cancelled(data) {
    this.ended(data, "Cancelled.", "");
  },
  session_renamed(data) {
    this.name = data.name;
    this.drawHead();
    this.loadSessions();
  },
  session_cleared() {
    clear(this.transcript);
    this.tools.clear();
    this.loadContext();
  },
  session_archived() {
    this.archived = true;
    this.drawHead();
  },
  session_restored() {
    this.archived = false;
    this.drawHead();
  },
};
