// The only module that talks HTTP. Every call sends the key in the
// Authorization header (never in a URL or a cookie), also the event stream,
// which is read with fetch streaming for exactly that reason.

const STORE = "famulus.key";

export class ApiError extends Error {
  constructor(status, detail, code) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.code = code;
  }
}

let unauthorized = () => {};

function key() {
  return sessionStorage.getItem(STORE) || localStorage.getItem(STORE) || "";
}

// The key lives in sessionStorage (gone with the tab) unless the person
// ticked "remember"; then in localStorage.
function setKey(value, remember) {
  forget();
  (remember ? localStorage : sessionStorage).setItem(STORE, value);
}

function forget() {
  sessionStorage.removeItem(STORE);
  localStorage.removeItem(STORE);
}

function url(path, query) {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

async function failure(response) {
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  const detail = (data && data.detail) || `The server answered HTTP ${response.status}.`;
  const error = new ApiError(response.status, detail, (data && data.code) || "");
  if (response.status === 401) unauthorized(error);
  return error;
}

async function request(method, path, body, query) {
  const headers = { Authorization: `Bearer ${key()}` };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url(path, query), init);
  } catch {
    throw new ApiError(0, "The server cannot be reached.", "network");
  }
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

// Splits an SSE byte stream into events; comment lines (": ping") are skipped.
function parseBlock(block) {
  let type = "message";
  let id = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") type = value;
    else if (field === "id") id = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { type, id, data: data.join("\n") } : null;
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

// Reads one connection until it ends; returns normally on a clean end or a drop.
async function readOnce(path, state, options) {
  const headers = { Authorization: `Bearer ${key()}`, Accept: "text/event-stream" };
  if (state.lastEventId) headers["Last-Event-ID"] = state.lastEventId;
  const response = await fetch(path, { headers, signal: options.signal, cache: "no-store" });
  if (!response.ok) throw await failure(response);
  state.failures = 0;
  options.onOpen?.(state.lastEventId);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseBlock(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (!event) continue;
      if (event.id) state.lastEventId = event.id;
      let data = null;
      try {
        data = JSON.parse(event.data);
      } catch {
        continue;
      }
      options.onEvent(event.type, data, event.id);
    }
  }
}

// Streams events until options.signal aborts. A drop (network, server restart)
// reconnects by itself with Last-Event-ID, so the server resends exactly what
// was missed. A 4xx other than 429 ends the stream with that error.
async function stream(path, options) {
  const state = { lastEventId: options.lastEventId || null, failures: 0 };
  while (!options.signal?.aborted) {
    try {
      await readOnce(path, state, options);
    } catch (error) {
      if (options.signal?.aborted) return;
      const status = error instanceof ApiError ? error.status : 0;
      if (status >= 400 && status < 500 && status !== 429) throw error;
    }
    if (options.signal?.aborted) return;
    options.onDrop?.();
    state.failures += 1;
    await sleep(Math.min(250 * 2 ** state.failures, 4000), options.signal);
  }
}

export const api = {
  get: (path, query) => request("GET", path, undefined, query),
  post: (path, body) => request("POST", path, body ?? {}),
  patch: (path, body) => request("PATCH", path, body),
  put: (path, body) => request("PUT", path, body),
  del: (path, body) => request("DELETE", path, body),
  stream,
  key,
  setKey,
  forget,
  onUnauthorized(handler) {
    unauthorized = handler;
  },
};
