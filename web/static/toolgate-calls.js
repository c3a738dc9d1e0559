// Running the calls a toolgate client receives: de-duplication by call id,
// the handler with its AbortSignal and progress() callback, turning what the
// handler returns or throws into tool_result / tool_error, and the outbox that
// posts each answer until the gateway acknowledges it.

import { ToolgateError, backoffDelay, requestJSON, sleep } from "./toolgate-http.js";

/** How many finished call ids are remembered for de-duplication. */
const REMEMBERED_CALLS = 2000;

/** The largest cost the gateway takes (toolgate.MaxCost). */
export const MAX_COST = 1e12;

/** Throws a TypeError unless `value` is a cost the gateway takes: a finite number from 0 to MAX_COST. */
export function checkCost(what, value) {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > MAX_COST) {
    const shown = typeof value === "number" ? String(value) : typeof value;
    throw new TypeError(`${what} must be a number from 0 to ${MAX_COST}, got ${shown}`);
  }
}

/**
 * Builds the answer for a handler that returned `value`.
 * `undefined` becomes `null`; a value JSON cannot encode becomes an error.
 */
export function resultAnswer(callId, value) {
  const output = value === undefined ? null : value;
  try {
    JSON.stringify(output);
  } catch (err) {
    return errorAnswer(callId, new Error(`The tool returned a value that cannot be sent as JSON: ${err.message}`));
  }
  return { type: "tool_result", id: callId, success: true, output };
}

/**
 * The gateway's rule for a tool error's code (docs/PROTOCOL.md): it refuses
 * an answer with any other code, and a refused answer would leave the caller
 * waiting until the call's deadline.
 */
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * Builds the tool_error answer for a thrown value. An error carrying a string
 * `code` keeps it (and its `details` when they are an object); anything else
 * is INTERNAL_ERROR. A code the gateway would refuse (lower case, a slash…)
 * is sent as INTERNAL_ERROR with the thrown code in details.original_code.
 */
export function errorAnswer(callId, thrown) {
  const isObject = thrown !== null && typeof thrown === "object";
  const message =
    isObject && typeof thrown.message === "string" && thrown.message !== ""
      ? thrown.message
      : typeof thrown === "string" && thrown !== ""
        ? thrown
        : "The tool failed without a message";
  let code = isObject && typeof thrown.code === "string" && thrown.code !== "" ? thrown.code : "INTERNAL_ERROR";
  let originalCode;
  if (!ERROR_CODE.test(code)) {
    originalCode = code;
    code = "INTERNAL_ERROR";
  }
  const answer = { type: "tool_error", id: callId, success: false, error: message, code };
  if (isObject && thrown.details && typeof thrown.details === "object") {
    try {
      JSON.stringify(thrown.details);
      answer.details = thrown.details;
    } catch {
      // details that cannot be encoded are left out rather than losing the answer
    }
  }
  if (originalCode !== undefined) answer.details = { ...answer.details, original_code: originalCode };
  return answer;
}

/**
 * Runs calls for one client. The client gives it the current session
 * (`getSession`), the tools (`getTool`), an `emit(type, detail)` function and
 * `persist()`, called whenever the outbox changes.
 */
export class CallRunner {
  /** @type {Map<string, {call: object, controller: AbortController, timer: any}>} */
  running = new Map();
  /** Answers posted but not acknowledged yet, by call id. */
  outbox = new Map();
  /** Ids of calls that ended here (answered, cancelled), oldest first. */
  #finished = new Set();
  #stopped = new AbortController();

  constructor({ fetchFn, baseUrl, getSession, getTool, emit, persist, retryBaseMs = 500, retryMaxMs = 30000 }) {
    Object.assign(this, { fetchFn, baseUrl, getSession, getTool, emit, persist, retryBaseMs, retryMaxMs });
  }

  /** Whether a call with this id is running, waiting for its ack, or done here. */
  knows(callId) {
    return this.running.has(callId) || this.outbox.has(callId) || this.#finished.has(callId);
  }

  /** Handles a tool_call_request event; a call already known is ignored. */
  accept(request) {
    if (typeof request.id !== "string" || this.knows(request.id)) return false;
    const call = {
      id: request.id,
      name: request.name,
      args: request.args ?? {},
      deadline: request.deadline ?? null,
      attempt: request.attempt ?? 1,
      receivedAt: new Date().toISOString(),
    };
    const controller = new AbortController();
    const entry = { call, controller, timer: null };
    this.running.set(call.id, entry);
    const deadlineMs = call.deadline ? Date.parse(call.deadline) - Date.now() : NaN;
    if (Number.isFinite(deadlineMs)) {
      // The gateway also sends call_cancelled on timeout; this timer covers a
      // cancellation that cannot reach us. A progress report moves it.
      entry.timer = setTimeout(() => this.cancel(call.id, "timeout"), Math.max(0, deadlineMs) + 1000);
    }
    this.emit("call", { phase: "received", call });
    this.#run(entry);
    return true;
  }

  async #run(entry) {
    const { call, controller } = entry;
    const tool = this.getTool(call.name);
    let answer;
    let cost; // what context.reportCost recorded, sent with either answer
    if (!tool) {
      answer = errorAnswer(call.id, { code: "TOOL_NOT_FOUND", message: `This client has no tool named "${call.name}"` });
    } else {
      const context = {
        callId: call.id,
        name: call.name,
        deadline: call.deadline,
        attempt: call.attempt,
        signal: controller.signal,
        progress: (progress) => this.#reportProgress(entry, progress),
        reportCost: (value) => {
          checkCost("reportCost's cost", value);
          cost = value;
        },
      };
      try {
        const value = await tool.handler(call.args, context);
        answer = resultAnswer(call.id, value);
      } catch (err) {
        answer = errorAnswer(call.id, err);
      }
      if (cost !== undefined) answer.cost = cost;
    }
    if (controller.signal.aborted) return; // cancelled: the gateway no longer wants an answer
    this.#end(call.id);
    this.emit("call", { phase: "answered", call, answer });
    this.send(answer);
  }

  /** Aborts a running call's handler (call_cancelled, deadline, close). */
  cancel(callId, reason) {
    const entry = this.running.get(callId);
    if (!entry) return false;
    // A call dropped because this client closes is still open at the gateway:
    // forget it, so its next delivery runs it again.
    this.#end(callId, reason !== "client_closed");
    entry.controller.abort(new ToolgateError("CANCELLED", `The call was cancelled (${reason})`, { details: { reason } }));
    this.emit("call", { phase: "cancelled", call: entry.call, reason });
    return true;
  }

  #end(callId, remember = true) {
    const entry = this.running.get(callId);
    if (entry?.timer) clearTimeout(entry.timer);
    this.running.delete(callId);
    if (remember) this.#remember(callId);
  }

  #remember(callId) {
    this.#finished.add(callId);
    if (this.#finished.size > REMEMBERED_CALLS) {
      this.#finished.delete(this.#finished.values().next().value);
    }
  }

  async #reportProgress(entry, progress) {
    const session = this.getSession();
    if (!session || entry.controller.signal.aborted) return null;
    const body = { type: "tool_progress", id: entry.call.id, progress: progress ?? {} };
    this.emit("call", { phase: "progress", call: entry.call, progress: body.progress });
    try {
      const ack = await requestJSON(this.fetchFn, this.#url(session, "progress"), { method: "POST", token: session.token, body });
      const deadlineMs = ack?.deadline ? Date.parse(ack.deadline) - Date.now() : NaN;
      if (Number.isFinite(deadlineMs) && this.running.get(entry.call.id) === entry) {
        entry.call.deadline = ack.deadline;
        clearTimeout(entry.timer);
        entry.timer = setTimeout(() => this.cancel(entry.call.id, "timeout"), Math.max(0, deadlineMs) + 1000);
      }
      return ack;
    } catch (err) {
      this.emit("error", { error: err, during: "progress", callId: entry.call.id });
      return null;
    }
  }

  /** Queues an answer and posts it until it is acknowledged or refused for good. */
  send(answer) {
    this.outbox.set(answer.id, answer);
    this.persist();
    this.#deliver(answer);
  }

  /** Re-posts answers restored from storage (after a page reload). */
  restore(answers) {
    for (const answer of answers) {
      if (!answer || typeof answer.id !== "string" || this.outbox.has(answer.id)) continue;
      this.#remember(answer.id);
      this.send(answer);
    }
  }

  async #deliver(answer) {
    const stop = this.#stopped.signal;
    for (let attempt = 0; !stop.aborted && this.outbox.get(answer.id) === answer; attempt++) {
      const session = this.getSession();
      if (session) {
        try {
          const ack = await requestJSON(this.fetchFn, this.#url(session, "results"), { method: "POST", token: session.token, body: answer });
          return this.#settle(answer, "acknowledged", { ack });
        } catch (err) {
          if (!(err instanceof ToolgateError)) return this.#settle(answer, "rejected", { error: err });
          if (err.code === "CALL_CLOSED") return this.#settle(answer, "closed", { error: err });
          if (err.code === "PAYLOAD_TOO_LARGE" && answer.type === "tool_result") {
            // Answer anyway, so the caller is not left waiting for the deadline.
            this.outbox.delete(answer.id);
            return this.send(errorAnswer(answer.id, { code: "INTERNAL_ERROR", message: "The tool's output is larger than the gateway accepts" }));
          }
          if (!err.retryable) return this.#settle(answer, "rejected", { error: err });
          this.emit("error", { error: err, during: "result", callId: answer.id, attempt });
          await sleep(err.retryAfterMs ?? backoffDelay(attempt, this.retryBaseMs, this.retryMaxMs), stop);
          continue;
        }
      }
      await sleep(backoffDelay(attempt, this.retryBaseMs, this.retryMaxMs), stop);
    }
  }

  #settle(answer, outcome, extra) {
    if (this.outbox.get(answer.id) === answer) {
      this.outbox.delete(answer.id);
      this.persist();
    }
    this.emit("call", { phase: outcome, call: { id: answer.id }, answer, ...extra });
  }

  #url(session, what) {
    return `${this.baseUrl}/v1/sessions/${encodeURIComponent(session.sessionId)}/${what}`;
  }

  /** Forgets every call: the session was replaced, its calls are gone. */
  reset() {
    this.stop("session_closed");
    this.outbox.clear();
    this.#finished.clear();
    this.persist();
  }

  /** Stops retries and aborts every running handler (the client is closing). */
  stop(reason = "client_closed") {
    this.#stopped.abort();
    for (const id of [...this.running.keys()]) this.cancel(id, reason);
  }

  /** Lets retries run again after stop(). */
  resume() {
    if (this.#stopped.signal.aborted) {
      this.#stopped = new AbortController();
      for (const answer of this.outbox.values()) this.#deliver(answer);
    }
  }
}
