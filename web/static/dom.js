// Small DOM helpers shared by the page's scripts (app.js, console.js,
// page-tools.js). The page has no framework and no build step.

/** The first element matching `selector` inside `root` (default: the document). */
export function $(selector, root = document) {
  return root.querySelector(selector);
}

/** Every element matching `selector` inside `root`, as an array. */
export function $$(selector, root = document) {
  return [...root.querySelectorAll(selector)];
}

/**
 * Creates an element. `attrs` may hold `class`, `dataset` (an object),
 * `hidden`, event handlers as `onclick` etc., and any other attribute;
 * `children` is a string, a node, or an array of them (null entries skipped).
 */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "hidden") node.hidden = Boolean(value);
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of [children].flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** JSON for display: indented, and short values kept on one line. */
export function formatJSON(value) {
  const compact = JSON.stringify(value);
  if (compact === undefined) return "null";
  return compact.length <= 60 ? compact : JSON.stringify(value, null, 2);
}

/**
 * The last 8 characters of an id, enough to tell sessions apart on screen
 * (the gateway's ids are time-ordered UUIDs, whose first characters are the
 * same for sessions made close together).
 */
export function shortId(id) {
  return typeof id === "string" ? id.slice(-8) : "—";
}

/** Local clock time of a date, e.g. "14:03:27". */
export function timeOf(date) {
  const d = date instanceof Date ? date : new Date(date);
  return Number.isNaN(d.getTime()) ? "—" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/** A duration in ms as "850 ms" or "3.2 s". */
export function formatDuration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "—";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Shows `message` in an error element, or hides it when `message` is empty. */
export function showError(node, message) {
  node.textContent = message ?? "";
  node.hidden = !message;
}
