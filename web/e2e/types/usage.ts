// Uses every export of the browser SDK the way the README, the gateway's page
// (web/static/app.js, page-tools.js) and the SDK tests do, so that
// `tsc --strict` proves toolgate.d.ts accepts real use. Each
// `@ts-expect-error` line is a misuse the declarations must refuse: tsc fails
// when such a line compiles. Nothing here runs; it is only type-checked.

import {
  MemoryStorage,
  SSEParser,
  TOOL_ERROR_CODES,
  ToolError,
  ToolgateClient,
  ToolgateError,
  VERSION,
} from "../../static/toolgate.js";
import type {
  Answer,
  AnswerAck,
  CallEventDetail,
  CallInfo,
  ConnectionCut,
  ConnectionInfo,
  ConnectionState,
  CutReason,
  ErrorDuring,
  ErrorEventDetail,
  JSONSchema,
  ProgressAck,
  ReceivedCall,
  RegistrationOutcome,
  SessionStorageLike,
  ToolCallContext,
  ToolDefinition,
  ToolErrorCode,
  ToolgateClientOptions,
  ToolgateEventMap,
  Transport,
  WireTool,
} from "../../static/toolgate.js";

/** Every cut reason, in words (fails to compile when one is missing). */
function describeCut(reason: CutReason): string {
  switch (reason) {
    case "ended":
    case "reset":
    case "stalled":
    case "timeout":
      return reason;
    case "http_502":
    case "http_503":
    case "http_504":
      return `a proxy answered ${reason.slice(5)}`;
    default:
      return exhaustive(reason);
  }
}

/** Fails to compile when a switch over a union misses a member. */
function exhaustive(value: never): never {
  throw new Error(`unexpected ${JSON.stringify(value)}`);
}

// --- the README's ten lines --------------------------------------------------

export async function readmeExample(): Promise<void> {
  const client = new ToolgateClient({ baseUrl: "http://127.0.0.1:8080" });
  client.registerTool({
    name: "page_title",
    description: "The title of the page the person is looking at",
    handler: () => ({ title: document.title }),
  });
  client.on("transport", ({ transport }) => console.log("receiving calls over", transport));
  await client.connect();
}

// --- constructor options -------------------------------------------------------

export function options(): ToolgateClient[] {
  const params = new URLSearchParams(location.search);
  const transport = params.get("transport") === "poll" ? "poll" : "auto";
  const page = new ToolgateClient({
    baseUrl: location.origin,
    transport,
    client: { name: "toolgate page", platform: "web" },
    metadata: { url: location.href, user_agent: navigator.userAgent, tags: ["a", 1, null, { nested: true }] },
  });
  const everything: ToolgateClientOptions = {
    baseUrl: "https://gateway.example",
    transport: "sse",
    storage: sessionStorage,
    storageKey: "my-app:toolgate",
    clientKey: "client-key",
    client: { name: "my-app", version: "1.2.3", platform: "desktop" },
    metadata: {},
    fetch: (input, init) => fetch(input, init),
    sseReadyTimeoutMs: 5000,
    sseRetryMs: 60000,
    sseRetryMaxMs: 600000,
    stallTimeoutMs: 35000,
    pollWaitMs: 25000,
    reconnectBaseMs: 500,
    reconnectMaxMs: 30000,
    shareConnection: false,
  };
  const custom: SessionStorageLike = {
    getItem: (key) => localStorage.getItem(key),
    setItem: (key, value) => localStorage.setItem(key, value),
    removeItem: (key) => localStorage.removeItem(key),
  };
  return [
    page,
    new ToolgateClient(),
    new ToolgateClient(everything),
    new ToolgateClient({ baseUrl: "http://x", storage: null }), // Node: the session lives in memory
    new ToolgateClient({ baseUrl: "http://x", storage: false }),
    new ToolgateClient({ baseUrl: "http://x", storage: new MemoryStorage(), transport: "poll" }),
    new ToolgateClient({ baseUrl: "http://x", storage: localStorage }),
    new ToolgateClient({ baseUrl: "http://x", storage: custom, fetch }),
    new ToolgateClient({ baseUrl: "http://x", client: { platform: "other" } }),
    new ToolgateClient({ baseUrl: "http://x", fetch: lossyFetch }),
    new ToolgateClient({ baseUrl: "http://x", shareConnection: true }),
  ];
}

/** A fetch wrapper like the tests' fetch-faults.mjs: it only handles what the SDK sends. */
async function lossyFetch(url: string, init?: RequestInit): Promise<Response> {
  if (url.endsWith("/results") && Math.random() < 0.1) throw new TypeError("fetch failed (simulated network loss)");
  return fetch(url, init);
}

export function refusedOptions(): void {
  // @ts-expect-error transport is "auto", "sse" or "poll"
  new ToolgateClient({ baseUrl: "http://x", transport: "ws" });
  // @ts-expect-error storage is Web Storage, null or false
  new ToolgateClient({ baseUrl: "http://x", storage: true });
  // @ts-expect-error a storage needs getItem, setItem and removeItem
  new ToolgateClient({ baseUrl: "http://x", storage: {} });
  // @ts-expect-error baseUrl is a string
  new ToolgateClient({ baseUrl: new URL("http://x") });
  // @ts-expect-error the platform is one the protocol knows
  new ToolgateClient({ client: { platform: "windows" } });
  // @ts-expect-error metadata is JSON
  new ToolgateClient({ metadata: { callback: () => 1 } });
  // @ts-expect-error no such option
  new ToolgateClient({ baseURL: "http://x" });
  // @ts-expect-error shareConnection is a boolean
  new ToolgateClient({ baseUrl: "http://x", shareConnection: "tabs" });
  // @ts-expect-error fetch resolves to a Response
  new ToolgateClient({ fetch: async (url: string) => url });
}

// --- tool definitions ----------------------------------------------------------

const empty: JSONSchema = { type: "object", properties: {}, additionalProperties: false };

/** Like page-tools.js's ask_user: typed arguments, the signal, the deadline, a ToolError. */
const askUser: ToolDefinition<{ question: string; choices?: string[] }> = {
  name: "ask_user",
  description: "Put a question to the person in front of this page and return their answer.",
  parameters: {
    type: "object",
    properties: { question: { type: "string" }, choices: { type: "array", items: { type: "string" } } },
    required: ["question"],
  },
  timeoutMs: 120000,
  handler(args, { signal, deadline }) {
    return new Promise((resolve, reject) => {
      const answer = args.choices?.[0] ?? args.question.toUpperCase();
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      if (deadline === null) reject(new ToolError("PERMISSION_DENIED", "The person declined to answer"));
      else resolve({ answer, by: Date.parse(deadline) });
    });
  },
};

/** Like page-tools.js's get_location: an approval requirement and ToolError details. */
const getLocation: ToolDefinition = {
  name: "get_location",
  description: "Ask the browser for the device's location.",
  parameters: { type: "object", properties: { high_accuracy: { type: "boolean" } }, additionalProperties: false },
  timeoutMs: 60000,
  requiresApproval: "unless_auto_approved",
  handler(args) {
    if (!navigator.geolocation) throw new ToolError("INTERNAL_ERROR", "This browser has no geolocation");
    if (args.high_accuracy) {
      throw new ToolError("PERMISSION_DENIED", "refused", { resolution_hint: "Allow location access." });
    }
    return null;
  },
};

/** Progress reports: with fields, with extra JSON, and with nothing. */
const upload: ToolDefinition<{ files: string[] }> = {
  name: "upload",
  description: "Uploads files, reporting progress",
  readOnly: false,
  requiresApproval: true,
  rateLimit: { requestsPerMinute: 60, requestsPerHour: 600 },
  async handler({ files }, context: ToolCallContext) {
    const { callId, name, attempt, signal, progress } = context;
    let ack: ProgressAck | null = null;
    for (const [i, file] of files.entries()) {
      if (signal.aborted) throw signal.reason;
      ack = await progress({ current: i, total: files.length, message: `uploading ${file}` });
      await context.progress({ stage: "hashing", bytes: 1024, done: false, parts: [1, 2] });
    }
    await context.progress();
    if (ack !== null) {
      const type: "progress_acknowledged" = ack.type;
      return { callId, name, attempt, type, id: ack.id, deadline: new Date(ack.deadline).getTime() };
    }
    return undefined;
  },
};

const mixed = [
  askUser,
  getLocation,
  upload,
  { name: "noop", description: "Does nothing", requiresApproval: false, handler() {} },
  { name: "text", description: "Returns a string", parameters: empty, handler: async () => "plain" },
] satisfies ToolDefinition[];

export function refusedTools(client: ToolgateClient): void {
  // @ts-expect-error a tool needs a handler
  client.registerTool({ name: "x", description: "d" });
  // @ts-expect-error a tool needs a description
  client.registerTool({ name: "x", handler() {} });
  // @ts-expect-error requiresApproval is a boolean or never / unless_auto_approved / always
  client.registerTool({ name: "x", description: "d", handler() {}, requiresApproval: "sometimes" });
  // @ts-expect-error parameters is a JSON Schema object
  client.registerTool({ name: "x", description: "d", handler() {}, parameters: ["text"] });
  // @ts-expect-error timeoutMs is a number of milliseconds
  client.registerTool({ name: "x", description: "d", handler() {}, timeoutMs: "30s" });
  // @ts-expect-error the wire's names are not the SDK's
  client.registerTool({ name: "x", description: "d", handler() {}, timeout_ms: 1000 });
  // @ts-expect-error an annotation's hint is a boolean
  client.registerTool({ name: "x", description: "d", handler() {}, annotations: { destructiveHint: "no" } });
  // @ts-expect-error an output schema is an object schema
  client.registerTool({ name: "x", description: "d", handler() {}, outputSchema: { type: "string" } });
  client.registerTool({
    name: "weather",
    description: "The temperature here",
    title: "Weather here",
    outputSchema: { type: "object", properties: { celsius: { type: "number" } }, required: ["celsius"] },
    annotations: { title: "Weather", destructiveHint: false, idempotentHint: true, openWorldHint: true },
    readOnly: true,
    handler: () => ({ celsius: 21.5 }),
  });
  client.registerTool({
    name: "x",
    description: "d",
    async handler(_args, ctx) {
      // @ts-expect-error a progress report is an object
      await ctx.progress("half way");
      // @ts-expect-error current is a number
      await ctx.progress({ current: "1" });
      // @ts-expect-error progress may resolve to null
      return (await ctx.progress()).deadline;
    },
  });
}

// --- registering, connecting, closing ------------------------------------------

export async function lifecycle(client: ToolgateClient): Promise<string[]> {
  const outcomes: Promise<RegistrationOutcome>[] = mixed.map((tool) => client.registerTool(tool));
  await client.connect();
  const lines: string[] = [];
  for (const outcome of await Promise.all(outcomes)) {
    lines.push(outcome.registered ? "registered" : `rejected: ${outcome.code} ${outcome.message}`);
    if (!outcome.registered) lines.push(outcome.code.toLowerCase());
    // @ts-expect-error only a refusal has a code
    lines.push(outcome.code.toLowerCase());
  }
  const removed: boolean = await client.unregisterTool("noop");
  lines.push(String(removed));

  const tools: WireTool[] = client.tools;
  for (const tool of tools) {
    lines.push(tool.name, tool.description, JSON.stringify(tool.parameters));
    if (tool.timeout_ms !== undefined) lines.push(String(tool.timeout_ms + 1));
    if (tool.requires_approval === "always" || tool.requires_approval === "unless_auto_approved") lines.push("approval");
    if (tool.read_only) lines.push("read only");
    lines.push(String(tool.rate_limit?.requests_per_minute ?? 0), String(tool.rate_limit?.requests_per_hour ?? 0));
    // @ts-expect-error the handler is not part of the wire form
    tool.handler();
    // @ts-expect-error the wire form has snake_case names
    lines.push(String(tool.timeoutMs));
  }

  const state: ConnectionState = client.state;
  const transport: Transport | null = client.transport;
  const shared: boolean = client.sharesConnection;
  const info: ConnectionInfo = client.connection;
  const cut: ConnectionCut | null = info.last_cut;
  lines.push(info.state, info.transport ?? "-", String(info.shared), String(info.heartbeat_ms ?? "-"), String(info.poll_wait_ms ?? "-"), String(info.cuts));
  if (cut) lines.push(cut.at, String(cut.after_ms), describeCut(cut.reason), cut.transport);
  // @ts-expect-error the connection is read-only
  client.connection = info;
  const sessionId: string | null = client.sessionId;
  const cursor: number | null = client.cursor;
  const baseUrl: string = client.baseUrl;
  const running: string[] = client.runningCalls;
  lines.push(state, transport ?? "-", String(shared), sessionId ?? "-", String(cursor), baseUrl, ...running, VERSION);
  // @ts-expect-error the state is read-only
  client.state = "connected";

  await client.close();
  await client.close({ endSession: true });
  // @ts-expect-error close takes {endSession}
  await client.close({ end: true });
  return lines;
}

// --- events -------------------------------------------------------------------

export function events(client: ToolgateClient): Array<() => void> {
  const log = (...parts: unknown[]) => console.log(...parts);
  const offs = [
    client.on("state", ({ state, previous }) => log(state, previous)),
    client.on("transport", ({ transport }) => log(transport === "sse" ? "live stream (SSE)" : transport === "poll" ? "long-poll" : "—")),
    client.on("session", ({ sessionId, created, lost, error }) => log(sessionId ?? "-", created, lost === true, error?.message)),
    client.on("registered", ({ count, registered, rejected }) => {
      for (const r of rejected) log(r.name, r.code, r.message);
      log(count - registered);
    }),
    client.on("call", (detail) => log(describeCall(detail))),
    client.on("connection", ({ state, transport, heartbeat_ms, poll_wait_ms, last_cut }) => log(state, transport, heartbeat_ms, poll_wait_ms, last_cut?.reason)),
    client.on("cut", ({ at, after_ms, reason, transport }) => log(at, after_ms, reason === "http_504" ? "a proxy's 504" : reason, transport)),
    client.on("error", (detail) => log(describeError(detail))),
  ];
  const onState = (event: CustomEvent<ToolgateEventMap["state"]>) => log(event.detail.state);
  client.addEventListener("state", onState);
  client.removeEventListener("state", onState);
  client.addEventListener("call", (event) => log(event.detail.phase, event.detail.call.id), { once: true });
  client.addEventListener("something-else", (event: Event) => log(event.type));

  // @ts-expect-error no such event
  client.on("message", () => {});
  // @ts-expect-error the listener receives the detail, whose phase decides its fields
  client.on("call", (detail) => log(detail.answer));
  return offs;
}

function describeCall(detail: CallEventDetail): string {
  const anyPhase: CallInfo = detail.call;
  const name: string | undefined = detail.call.name;
  switch (detail.phase) {
    case "received": {
      const call: ReceivedCall = detail.call;
      return `${call.name}(${JSON.stringify(call.args)}) #${call.attempt} by ${call.deadline ?? "never"} at ${call.receivedAt}`;
    }
    case "progress": {
      const p = detail.progress;
      return p.total ? `running ${p.current ?? 0}/${p.total} ${p.message ?? ""}` : "running";
    }
    case "answered":
      return describeAnswer(detail.answer) + detail.call.name.length;
    case "acknowledged": {
      const ack: AnswerAck = detail.ack;
      // @ts-expect-error after a settled answer only the call's id is known for sure
      detail.call.name.length;
      return `${anyPhase.id} ${ack.status}${ack.duplicate ? " (again)" : ""} ${describeAnswer(detail.answer)}`;
    }
    case "closed":
    case "rejected":
      return `${detail.phase}: ${detail.error.message} ${name ?? ""}`;
    case "cancelled":
      return detail.reason === "client_closed" || detail.reason === "timeout" ? "stopped here" : `cancelled (${detail.reason})`;
    default:
      return exhaustive(detail);
  }
}

function describeAnswer(answer: Answer): string {
  if (answer.success) return JSON.stringify(answer.output);
  return `${answer.code}: ${answer.error} ${JSON.stringify(answer.details ?? {})}`;
}

function describeError(detail: ErrorEventDetail): string {
  const { error, during } = detail;
  switch (during) {
    case "connect":
      return `refused${detail.fatal ? " for good" : ""}: ${error.message}`;
    case "connection":
    case "stream":
    case "stream-probe":
    case "register":
      return `${during}: ${error.message}`;
    case "progress":
      return `progress of ${detail.callId}: ${error.message}`;
    case "result":
      return `answer to ${detail.callId}, try ${detail.attempt}: ${error.message}`;
    default:
      return exhaustive(during);
  }
}

// @ts-expect-error not a value of `during`
export const notADuring: ErrorDuring = "answer";

// --- errors -------------------------------------------------------------------

export async function errors(client: ToolgateClient): Promise<string> {
  try {
    await client.connect();
  } catch (err) {
    if (err instanceof ToolgateError) {
      const retry: number | undefined = err.retryAfterMs;
      return `${err.code} ${err.status} ${err.retryable} ${err.fatal ?? false} ${JSON.stringify(err.details)} ${retry}`;
    }
  }
  const made = new ToolgateError("NETWORK", "down", { status: 0, details: { reason: "offline" }, retryAfterMs: 1000, cause: new Error("x") });
  const bare = new ToolgateError("CALL_CLOSED", "closed");
  const toolError = new ToolError("AUTH_REQUIRED", "Sign in first", { authorize_intent: "login" });
  const custom = new ToolError("QUOTA_EXCEEDED", "Try tomorrow");
  const codes: readonly ToolErrorCode[] = TOOL_ERROR_CODES;
  const known = (code: string) => (TOOL_ERROR_CODES as readonly string[]).includes(code);
  // @ts-expect-error a ToolError needs a code and a message
  new ToolError("INTERNAL_ERROR");
  // @ts-expect-error retryable is computed from the status
  made.retryable = true;
  // @ts-expect-error the list is frozen
  TOOL_ERROR_CODES.push("NEW");
  const asError: Error[] = [made, bare, toolError, custom];
  return [...asError.map((e) => e.message), ...codes, String(known(custom.code)), toolError.code, JSON.stringify(toolError.details)].join();
}

// --- storage and the stream parser --------------------------------------------

export function storageAndParser(): string[] {
  const storage = new MemoryStorage();
  storage.setItem("k", "v");
  const value: string | null = storage.getItem("k");
  storage.removeItem("k");
  const parser = new SSEParser();
  const out: string[] = [value ?? ""];
  for (const ev of parser.push("retry: 2000\n\nevent: ready\ndata: {}\n\n")) {
    out.push(ev.event, ev.data, ev.id ?? "no id");
  }
  out.push(String(parser.retryMs ?? 0));
  return out;
}
