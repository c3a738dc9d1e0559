// The gateway's page as a tool client: it registers browser tools with the
// SDK, shows the connection and transport, and logs each call as it arrives
// and is answered. The operator console (console.js) starts beside it when an
// agent key is known.
//
// Query parameters, for trying things out: ?transport=auto|sse|poll.

import { ToolgateClient } from "./toolgate.js";
import { browserTools, pageAddress } from "./page-tools.js";
import { startConsole } from "./console.js";
import { $, el, formatJSON, shortId, timeOf } from "./dom.js";

const params = new URLSearchParams(location.search);
const client = new ToolgateClient({
  baseUrl: location.origin,
  transport: params.get("transport") ?? "auto",
  client: { name: "toolgate page", platform: "web" },
  metadata: { url: pageAddress(), user_agent: navigator.userAgent },
});

// --- connection ----------------------------------------------------------

const stateLabels = {
  idle: "starting",
  connecting: "connecting",
  connected: "connected",
  reconnecting: "reconnecting",
  closed: "disconnected",
};

function showState(state) {
  const pill = $('[data-testid="conn-state"]');
  pill.dataset.state = state;
  $(".label", pill).textContent = stateLabels[state] ?? state;
}

function showTransport(transport) {
  const pill = $('[data-testid="transport"]');
  pill.textContent = transport === "sse" ? "live stream (SSE)" : transport === "poll" ? "long-poll" : "—";
  pill.dataset.transport = transport ?? "";
  pill.classList.toggle("muted", !transport);
}

function showSession() {
  $('[data-testid="session-id"]').textContent = client.sessionId ? shortId(client.sessionId) : "—";
  $('[data-testid="session-id"]').title = client.sessionId ?? "";
}

client.on("state", ({ state }) => showState(state));
client.on("transport", ({ transport }) => showTransport(transport));
client.on("session", showSession);

// --- tools -----------------------------------------------------------------

const registration = $('[data-testid="page-tools"]');
for (const tool of browserTools()) {
  const item = el("li", { dataset: { tool: tool.name } }, [
    el("code", {}, tool.name),
    el("span", { class: "muted" }, tool.description),
    el("span", { class: "chip", dataset: { role: "registration" } }, "waiting"),
  ]);
  registration.append(item);
  client.registerTool(tool).then((outcome) => {
    const chip = $('[data-role="registration"]', item);
    chip.textContent = outcome.registered ? "registered" : `rejected: ${outcome.message}`;
    chip.dataset.status = outcome.registered ? "completed" : "failed";
  });
}

// --- the call log ----------------------------------------------------------

const callLog = $('[data-testid="call-log"]');
const callItems = new Map();
let callsSeen = 0;

/** What the call log shows for each phase of a call (see the SDK's "call" event). */
const phaseText = {
  received: "running",
  progress: "running",
  answered: "sending answer",
  acknowledged: "answered",
  closed: "too late: call closed",
  rejected: "answer refused",
  cancelled: "cancelled",
};

function callItem(call) {
  let item = callItems.get(call.id);
  if (item) return item;
  callsSeen++;
  $('[data-testid="call-count"]').textContent = `${callsSeen} call${callsSeen === 1 ? "" : "s"}`;
  item = el("li", { class: "call", dataset: { callId: call.id, tool: call.name ?? "" } }, [
    el("div", { class: "call-head" }, [
      el("code", { class: "call-name" }, call.name ?? "call"),
      el("span", { class: "chip", dataset: { role: "status" } }, "running"),
      el("time", { class: "muted small" }, timeOf(new Date())),
    ]),
    el("pre", { class: "call-args", dataset: { role: "args" } }, formatJSON(call.args ?? {})),
    el("pre", { class: "call-output", dataset: { role: "output" }, hidden: true }),
  ]);
  callItems.set(call.id, item);
  callLog.prepend(item);
  $('[data-empty-for="call-log"]').hidden = true;
  return item;
}

client.on("call", (detail) => {
  if (detail.phase !== "received" && !callItems.has(detail.call.id)) return; // an answer restored after a reload
  const item = callItem(detail.call);
  const status = $('[data-role="status"]', item);
  status.textContent = phaseText[detail.phase] ?? detail.phase;
  status.dataset.status = detail.phase;
  const output = $('[data-role="output"]', item);
  if (detail.phase === "progress") {
    const p = detail.progress ?? {};
    status.textContent = p.total ? `running ${p.current ?? 0}/${p.total}` : "running";
  } else if (detail.phase === "answered") {
    output.hidden = false;
    output.classList.toggle("failed", !detail.answer.success);
    output.textContent = detail.answer.success
      ? formatJSON(detail.answer.output)
      : `${detail.answer.code}: ${detail.answer.error}`;
  } else if (detail.phase === "cancelled") {
    output.hidden = false;
    output.textContent = `cancelled (${detail.reason})`;
  }
});

// --- start -------------------------------------------------------------------

showSession();
client.connect().then(showSession, (error) => {
  const pill = $('[data-testid="conn-state"]');
  pill.title = error.message;
  $(".label", pill).textContent = `refused: ${error.message}`;
});

startConsole({ client });

// Exposed for people poking at the page from the developer tools, and for tests.
globalThis.toolgateClient = client;
