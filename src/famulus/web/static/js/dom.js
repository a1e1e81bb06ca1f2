// Building the page without ever parsing data as HTML: h() makes elements and
// text nodes; markdown() is the one place HTML is made from text, and its
// output always goes through the sanitizer first.

import { Marked } from "/vendor/marked.esm.js";
import DOMPurify from "/vendor/purify.es.mjs";

// h("button", {class: "x", on: {click: fn}, dataset: {id: 1}}, "text", node)
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "on") {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "class") {
      el.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    } else if (name in el && typeof value !== "string") {
      el[name] = value;
    } else if (name === "value" || name === "checked" || name === "disabled") {
      el[name] = value;
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

const SAFE_URL = /^(?:https?:|mailto:|#)/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") || "";
    if (!SAFE_URL.test(href)) node.removeAttribute("href");
    node.setAttribute("rel", "noopener noreferrer");
    node.setAttribute("target", "_blank");
  }
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|data:image\/(?:png|jpeg|gif|webp);)/i,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"],
  FORBID_ATTR: ["style", "srcset"],
};

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);

// Raw HTML inside Markdown is shown as the text it is, never parsed: what a
// model or a web page wrote as "<img onerror=…>" is something to read, and
// markup that never exists cannot misbehave (the sanitizer stays as the second
// line of defence, for what Markdown itself makes, such as javascript: links).
const renderer = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
  },
});

// Model output, tool results, skill text and memory: Markdown rendered, then
// sanitized (no scripts, no event handlers, only http(s)/mailto links).
export function markdown(text) {
  const html = renderer.parse(String(text ?? ""));
  const fragment = DOMPurify.sanitize(html, PURIFY);
  const blocks = fragment.querySelectorAll("pre code");
  if (blocks.length) highlight([...blocks]);
  return fragment;
}

// Code blocks are coloured by the vendored highlight.js, loaded only when the
// first code block shows (it is the largest file; the first view needs none).
// It reads each block's text and writes escaped, classed spans.
let highlighter = null;

function highlight(blocks) {
  highlighter ??= import("/vendor/highlight.min.js").then(({ default: hljs }) => {
    hljs.configure({ ignoreUnescapedHTML: true });
    return hljs;
  });
  highlighter
    .then((hljs) => {
      for (const block of blocks) if (!block.dataset.highlighted) hljs.highlightElement(block);
    })
    .catch((error) => console.warn("code highlighting unavailable", error));
}

// A short local time: "14:05" today, "3 Nov 14:05" otherwise.
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (date.toDateString() === new Date().toDateString()) return time;
  const day = date.toLocaleDateString([], { day: "numeric", month: "short" });
  return `${day} ${time}`;
}

// A modal yes/no question; resolves true only on the confirming button.
export function confirmDialog(text, confirmLabel = "OK") {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "confirm" });
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    dialog.append(
      h("p", {}, text),
      h(
        "div",
        { class: "row end" },
        h("button", { type: "button", on: { click: () => done(false) } }, "Cancel"),
        h(
          "button",
          { type: "button", class: "danger", dataset: { confirm: "" }, on: { click: () => done(true) } },
          confirmLabel,
        ),
      ),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
