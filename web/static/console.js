// The operator console: with the agent key (from the link `toolgate serve`
// prints, `#agent_key=...`, kept in sessionStorage) it lists the tools of
// every session a page at a time, calls one with arguments checked against
// its schema, and hosts the history, approvals and chat panels
// (console-calls.js, chat.js).

import { requestJSON } from "./toolgate-http.js";
import { validate, skeleton } from "./schema.js";
import { $, el, formatJSON, shortId, showError, timeOf } from "./dom.js";
import { startCallPanels } from "./console-calls.js";
import { startChat } from "./chat.js";

const KEY_STORAGE = "toolgate:agent_key";
const REFRESH_MS = 4000;
/** Tools per page of the tools table (GET /api/tools pages by `limit` and `after`). */
const TOOL_PAGE = 100;
/** Sessions read for the tools' labels: the newest page of GET /v1/sessions. */
const SESSION_PAGE = 100;

/** Reads the agent key from the URL fragment (then removes it from the address bar) or from storage. */
function takeAgentKey() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const fromUrl = fragment.get("agent_key");
  if (fromUrl) {
    sessionStorage.setItem(KEY_STORAGE, fromUrl);
    fragment.delete("agent_key");
    const rest = fragment.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return sessionStorage.getItem(KEY_STORAGE);
}

/**
 * Starts the console next to the page's own client. `client` is the page's
 * ToolgateClient: its session is the default target of the chat.
 */
export function startConsole({ client }) {
  const keyForm = $("#key-form");
  const body = $("#console-body");
  let key = takeAgentKey();
  let timer = null;
  let panels = null;

  /** Calls the caller API with the agent key. */
  const api = (path, opts = {}) => requestJSON(fetch, `${location.origin}${path}`, { ...opts, token: key });

  // toolCursors: the `after` of each tools page from the first to the one
  // shown ("" for the first); nextTools: the next page's, or null.
  // reachedAt: when the gateway last answered; unreachableSince: since when
  // it has not (null while it answers).
  const state = { tools: [], sessions: new Map(), moreSessions: false, toolCursors: [""], nextTools: null, reachedAt: null, unreachableSince: null };
  const pager = toolPager(state, () => refresh());

  function signedOut(message) {
    clearInterval(timer);
    timer = null;
    key = null;
    sessionStorage.removeItem(KEY_STORAGE);
    body.hidden = true;
    keyForm.hidden = false;
    showError($('[data-role="error"]', keyForm), message);
  }

  async function refresh() {
    if (document.hidden || !key) return;
    try {
      const after = state.toolCursors.at(-1);
      const query = new URLSearchParams({ limit: String(TOOL_PAGE) });
      if (after) query.set("after", after);
      const [tools, sessions] = await Promise.all([
        api(`/api/tools?${query}`),
        api(`/v1/sessions?limit=${SESSION_PAGE}`).catch(() => null),
      ]);
      state.tools = Array.isArray(tools?.tools) ? tools.tools : [];
      state.nextTools = tools?.next_after ?? null;
      state.sessions = new Map((sessions?.sessions ?? []).map((s) => [s.session_id ?? s.id, s]));
      state.moreSessions = Boolean(sessions?.next_before);
      state.reachedAt = new Date();
      state.unreachableSince = null;
      renderTools(state, client);
      pager.show();
      fillToolSelect(state);
      showError($('[data-role="tools-error"]'), "");
      showReachability(state);
      await panels?.refresh(state);
    } catch (err) {
      if (err.code === "UNAUTHENTICATED" || err.code === "PERMISSION_DENIED") {
        signedOut(`The agent key was refused: ${err.message}`);
        return;
      }
      if (gatewayUnreachable(err)) {
        // What the table said is no longer known: no tool is shown as connected.
        state.unreachableSince ??= new Date();
        renderTools(state, client);
        showReachability(state, err);
        return;
      }
      showError($('[data-role="tools-error"]'), `Cannot load the tools: ${err.message}`);
    }
  }

  function signedIn() {
    keyForm.hidden = true;
    body.hidden = false;
    panels ??= startCallPanels({ api, state });
    refresh();
    clearInterval(timer);
    timer = setInterval(refresh, REFRESH_MS);
  }

  keyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = keyForm.elements.key.value.trim();
    if (!value) return;
    key = value;
    sessionStorage.setItem(KEY_STORAGE, key);
    keyForm.reset();
    signedIn();
  });
  $("#sign-out").addEventListener("click", () => signedOut(""));

  document.addEventListener("visibilitychange", () => key && !document.hidden && refresh());

  setupCallForm(api, state);
  startChat({ getKey: () => key, client });
  // Calls to this page change the history; refresh soon after each answer.
  client.on("call", ({ phase }) => {
    if (phase === "acknowledged" || phase === "received") setTimeout(refresh, 200);
  });

  if (key) signedIn();
  else keyForm.hidden = false;
}

/** Whether a failed request means the gateway cannot be reached (no answer, or a proxy's 502/503/504). */
function gatewayUnreachable(err) {
  return err?.status === 0 || err?.status === 502 || err?.status === 503 || err?.status === 504;
}

/** The banner and the time stamp: plain words when the gateway cannot be reached. */
function showReachability(state, err) {
  const banner = $('[data-testid="gateway-down"]');
  const stamp = $('[data-testid="console-refresh"]');
  if (state.unreachableSince === null) {
    banner.hidden = true;
    stamp.textContent = `updated ${timeOf(state.reachedAt)}`;
    return;
  }
  banner.hidden = false;
  const last = state.reachedAt ? ` Last reached at ${timeOf(state.reachedAt)}; what the console showed then may have changed.` : "";
  banner.textContent = `The gateway cannot be reached since ${timeOf(state.unreachableSince)} (${err?.message ?? "no answer"}).${last} Trying again every ${REFRESH_MS / 1000} s.`;
  stamp.textContent = `gateway unreachable since ${timeOf(state.unreachableSince)}`;
}

/** Presence states of a tool's session, from the best. */
const PRESENCE_ORDER = ["connected", "away", "offline", "unknown"];
/** The chip colour of each presence (the call status styles of style.css). */
const PRESENCE_STATUS = { connected: "completed", away: "pending", offline: "cancelled", unknown: "cancelled" };
/** What the chip's title says. */
const PRESENCE_TITLE = {
  connected: "Its session holds a connection to the gateway now.",
  away: "Its session lost its connection a moment ago and may be back (a reload, a network change): calls wait for it.",
  offline: "Its session is gone or has been away too long: calls to it fail.",
  unknown: "The gateway cannot be reached: its state is not known.",
};

/**
 * A tool's presence: the gateway's `presence` ("connected", "away",
 * "offline"), or from `online` from a gateway that gives none; "unknown"
 * while the gateway cannot be reached.
 */
export function presenceOf(tool, unreachable = false) {
  if (unreachable) return "unknown";
  if (PRESENCE_ORDER.includes(tool.presence)) return tool.presence;
  return tool.online ? "connected" : "offline";
}

/** The tool's key in the select: session id (empty for built-ins) and name. */
function toolKey(tool) {
  return `${tool.source?.session_id ?? ""}/${tool.name}`;
}

function sourceLabel(tool, sessions) {
  if (tool.source?.kind !== "remote") return "built-in";
  const session = sessions.get(tool.source.session_id);
  const name = session?.client?.name;
  return `${name ? `${name} · ` : ""}session ${shortId(tool.source.session_id)}`;
}

function renderTools(state, client) {
  const tbody = $('[data-testid="tools-table"] tbody');
  const unreachable = state.unreachableSince !== null;
  const rank = (tool) => PRESENCE_ORDER.indexOf(presenceOf(tool));
  const rows = [...state.tools].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
  tbody.replaceChildren(
    ...rows.map((tool) => {
      const mine = tool.source?.session_id && tool.source.session_id === client.sessionId;
      const presence = presenceOf(tool, unreachable);
      return el("tr", { dataset: { tool: tool.name, sessionId: tool.source?.session_id ?? "", presence } }, [
        el("td", {}, [el("code", {}, tool.name), el("div", { class: "muted small clamp" }, tool.description ?? "")]),
        el("td", { class: "small" }, [sourceLabel(tool, state.sessions), mine ? el("span", { class: "chip" }, "this page") : null]),
        el("td", {}, el("span", { class: "chip", title: PRESENCE_TITLE[presence], dataset: { status: PRESENCE_STATUS[presence], role: "presence" } }, presence)),
        el("td", {}, el("button", { type: "button", class: "secondary small-button", onclick: () => chooseTool(state, toolKey(tool)) }, "Call")),
      ]);
    }),
  );
  const count = (p) => rows.filter((t) => presenceOf(t) === p).length;
  const paged = state.nextTools || state.toolCursors.length > 1;
  const page = paged ? ` (page ${state.toolCursors.length}${state.nextTools ? ", more on the next" : ", the last"})` : "";
  const sessions = `${state.sessions.size}${state.moreSessions ? "+" : ""} sessions`;
  const presence = unreachable ? "state unknown" : `${count("connected")} connected, ${count("away")} away`;
  $('[data-role="tools-summary"]').textContent = `${rows.length} tools, ${presence}${page} · ${sessions}`;
}

/**
 * The tools table's paging buttons, added under the table: "Next tools"
 * while there is a next page, "First tools" once past the first. A click
 * moves `state.toolCursors` and calls reload; `show()` updates the buttons
 * after a load.
 */
function toolPager(state, reload) {
  const next = el("button", { type: "button", class: "secondary", dataset: { role: "tools-next" } }, "Next tools");
  const first = el("button", { type: "button", class: "secondary", dataset: { role: "tools-first" } }, "First tools");
  const row = el("div", { class: "row end", dataset: { testid: "tools-pager" }, hidden: true }, [first, next]);
  $('[data-testid="tools-table"]').closest(".card").append(row);
  next.addEventListener("click", () => {
    if (!state.nextTools) return;
    state.toolCursors = [...state.toolCursors, state.nextTools];
    reload();
  });
  first.addEventListener("click", () => {
    state.toolCursors = [""];
    reload();
  });
  return {
    show() {
      next.hidden = !state.nextTools;
      first.hidden = state.toolCursors.length <= 1;
      row.hidden = next.hidden && first.hidden;
    },
  };
}

function fillToolSelect(state) {
  const select = $("#call-form select[name=tool]");
  const current = select.value;
  const options = state.tools.map((tool) =>
    el("option", { value: toolKey(tool) }, `${tool.name} — ${sourceLabel(tool, state.sessions)}${presenceOf(tool) === "connected" ? "" : ` (${presenceOf(tool)})`}`),
  );
  select.replaceChildren(el("option", { value: "" }, "choose a tool…"), ...options);
  select.value = state.tools.some((t) => toolKey(t) === current) ? current : "";
}

function chooseTool(state, keyOfTool) {
  const form = $("#call-form");
  form.elements.tool.value = keyOfTool;
  form.elements.tool.dispatchEvent(new Event("change"));
  form.scrollIntoView({ behavior: "smooth", block: "start" });
}

function findTool(state, keyOfTool) {
  return state.tools.find((t) => toolKey(t) === keyOfTool);
}

/** Parses the arguments box and checks them against the tool's schema; returns {args} or {problems}. */
export function checkArguments(tool, text) {
  let args;
  try {
    args = JSON.parse(text || "{}");
  } catch (err) {
    return { problems: [{ path: "(arguments)", message: `not valid JSON: ${err.message}` }] };
  }
  const problems = validate(tool?.parameters ?? { type: "object" }, args);
  return problems.length ? { problems } : { args };
}

function setupCallForm(api, state) {
  const form = $("#call-form");
  const problemsList = $('[data-role="problems"]', form);
  const result = $('[data-role="result"]', form);
  const showProblems = (problems) =>
    problemsList.replaceChildren(...problems.map((p) => el("li", {}, [el("code", {}, p.path), ` ${p.message}`])));

  form.elements.tool.addEventListener("change", () => {
    const tool = findTool(state, form.elements.tool.value);
    $('[data-role="tool-description"]', form).textContent = tool?.description ?? "";
    form.elements.args.value = JSON.stringify(skeleton(tool?.parameters), null, 2);
    showProblems([]);
  });
  form.elements.args.addEventListener("input", () => {
    const tool = findTool(state, form.elements.tool.value);
    if (tool) showProblems(checkArguments(tool, form.elements.args.value).problems ?? []);
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const tool = findTool(state, form.elements.tool.value);
    if (!tool) return showProblems([{ path: "tool", message: "choose a tool first" }]);
    const { args, problems } = checkArguments(tool, form.elements.args.value);
    showProblems(problems ?? []);
    if (problems) return;
    const request = { tool: tool.name, args, wait: false };
    if (tool.source?.session_id) request.session_id = tool.source.session_id;
    const timeout = Number(form.elements.timeout.value);
    if (timeout > 0) request.timeout_ms = timeout;
    const button = $("button[type=submit]", form);
    button.disabled = true;
    result.hidden = false;
    result.replaceChildren(el("span", { class: "chip", dataset: { status: "pending" } }, "sending…"));
    try {
      let record = await api("/v1/calls", { method: "POST", body: request });
      while (record && !isFinal(record.status)) {
        renderRecord(result, record);
        record = await api(`/v1/calls/${encodeURIComponent(record.id)}?wait_ms=20000`);
      }
      renderRecord(result, record);
    } catch (err) {
      result.replaceChildren(el("p", { class: "error" }, `${err.code}: ${err.message}`));
      if (err.details) result.append(el("pre", {}, formatJSON(err.details)));
    } finally {
      button.disabled = false;
    }
  });
}

const FINAL = new Set(["completed", "failed", "timed_out", "cancelled", "denied"]);

/** Whether a call status is final. */
export function isFinal(status) {
  return FINAL.has(status);
}

/** Shows a call record: status, duration, output or error. */
export function renderRecord(node, record) {
  const parts = [
    el("div", { class: "row" }, [
      el("span", { class: "chip", dataset: { status: record.status } }, record.status),
      el("code", { class: "muted small" }, record.id),
    ]),
  ];
  if (record.output !== undefined && record.output !== null) parts.push(el("pre", {}, formatJSON(record.output)));
  if (record.error) parts.push(el("pre", { class: "failed" }, `${record.error.code}: ${record.error.message}`));
  node.replaceChildren(...parts);
}
