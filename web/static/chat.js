// The console's chat with the agent: each message starts a run
// (POST /v1/runs) on this page's session and streams its events — the model's
// words, the tools it calls, approvals it waits for — into the conversation.
// When the gateway has no model configured, its error says what to set, and
// that is what the chat shows.

import { SSEParser } from "./toolgate.js";
import { errorFromReply } from "./toolgate-http.js";
import { $, el, formatJSON } from "./dom.js";

/**
 * Wires the chat form. `getKey()` returns the agent key; `client` is the
 * page's ToolgateClient, whose session the runs use.
 */
export function startChat({ getKey, client }) {
  const form = $("#chat-form");
  const log = $('[data-role="chat-log"]');
  /** The conversation so far, in the chat format, sent with each new run. */
  const messages = [];

  const add = (role, text, extra = {}) => {
    const item = el("li", { class: `chat-${role}`, dataset: { role }, ...extra }, text);
    log.append(item);
    item.scrollIntoView({ block: "nearest" });
    return item;
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = form.elements.input.value.trim();
    if (!input) return;
    form.elements.input.value = "";
    const button = $("button", form);
    button.disabled = true;
    add("user", input);
    const body = { max_steps: 8 };
    if (client.sessionId) body.session_id = client.sessionId;
    if (messages.length) body.messages = [...messages, { role: "user", content: input }];
    else body.input = input;
    try {
      const reply = await runAgent(getKey(), body, (ev) => showRunEvent(ev, add));
      messages.push({ role: "user", content: input });
      if (reply) messages.push({ role: "assistant", content: reply });
    } catch (err) {
      const why =
        err.status === 404 && err.code === "NOT_FOUND"
          ? `this gateway does not offer agent runs (POST /v1/runs answered: ${err.message})`
          : `${err.message}${err.code ? ` (${err.code})` : ""}`;
      add("error", `The agent could not run: ${why}`);
    } finally {
      button.disabled = false;
    }
  });
}

/** Text of a model message, whatever shape the event gives it. */
function messageText(ev) {
  const m = ev.message ?? ev;
  if (typeof m.content === "string") return m.content;
  if (Array.isArray(m.content)) return m.content.map((part) => part.text ?? "").join("");
  return typeof m.text === "string" ? m.text : "";
}

function showRunEvent(ev, add) {
  switch (ev.type) {
    case "model_message": {
      const text = messageText(ev);
      if (text) add("assistant", text);
      break;
    }
    case "tool_call_started":
      add("tool", `→ ${ev.tool ?? ev.name ?? "tool"} ${formatJSON(ev.args ?? {})}`);
      break;
    case "tool_call_finished":
      add("tool", `← ${ev.tool ?? ev.name ?? "tool"}: ${ev.status ?? (ev.error ? "failed" : "done")}`);
      break;
    case "approval_needed":
      add("notice", `${ev.tool ?? ev.name ?? "A tool"} waits for approval — approve or deny it above.`);
      break;
    case "run_failed":
      add("error", `The run failed: ${ev.error?.message ?? ev.message ?? "no reason given"}`);
      break;
    default:
      break; // run_started, tool_call_progress, run_finished need no line of their own
  }
}

/**
 * Starts a run and follows its event stream (or reads its final record when
 * the gateway answers JSON). Returns the last assistant text.
 */
async function runAgent(key, body, onEvent) {
  const res = await fetch(`${location.origin}/v1/runs`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    let data = null;
    try {
      data = JSON.parse(await res.text());
    } catch {
      // the status line alone explains it
    }
    throw errorFromReply(res, data);
  }
  let last = "";
  const seen = (ev) => {
    if (ev.type === "model_message") last = messageText(ev) || last;
    if (ev.type === "run_failed") throw Object.assign(new Error(ev.error?.message ?? "the run failed"), { code: ev.error?.code });
    onEvent(ev);
  };
  if (!(res.headers.get("Content-Type") ?? "").startsWith("text/event-stream")) {
    const run = await res.json();
    for (const m of run.messages ?? []) if (m.role === "assistant") seen({ type: "model_message", message: m });
    return last;
  }
  const parser = new SSEParser();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const raw of parser.push(decoder.decode(value, { stream: true }))) {
      let ev;
      try {
        ev = JSON.parse(raw.data);
      } catch {
        continue;
      }
      seen({ ...ev, type: ev.type ?? raw.event });
      if (ev.type === "run_finished" || raw.event === "run_finished") return last;
    }
  }
  return last;
}
