// Type declarations for toolgate.js, the toolgate browser SDK. They describe
// what the JavaScript beside them accepts and returns. `make e2e` checks them
// with `tsc --strict` against web/e2e/types/usage.ts, which uses every export,
// and web/e2e/sdk/declarations.test.mjs holds their exports and string sets
// to the JavaScript's.

/** Where the connection is. */
export type ConnectionState = "idle" | "connecting" | "connected" | "reconnecting" | "closed";

/** How calls are received: a Server-Sent Events stream or a long-poll. */
export type Transport = "sse" | "poll";

/**
 * Why a live connection ended without the gateway saying so: "ended" (closed cleanly by something on
 * the way, as a proxy's idle timeout does), "reset" (broken; in a browser also a proxy's 504 without
 * CORS headers), "stalled" (no byte for the stall timeout), "timeout" (a poll got no answer at all),
 * "http_502" / "http_503" / "http_504" (a proxy's answer to a held poll).
 */
export type CutReason = "ended" | "reset" | "stalled" | "timeout" | "http_502" | "http_503" | "http_504";

/** A live connection that was cut. */
export interface ConnectionCut {
  /** RFC 3339 time of the cut. */
  at: string;
  /** How long the connection had been live (a stream: since "ready"; a poll: its hold) when it was cut. */
  after_ms: number;
  reason: CutReason;
  transport: Transport;
}

/**
 * What a client knows of its connection (`client.connection`, the "connection" event). With a shared
 * connection the leading tab's, as it tells the other tabs. On its own (no "connection" event needed)
 * the client keeps the path's lessons per gateway in localStorage (key "toolgate-path:" + baseUrl),
 * shared by the tabs: after two idle cuts of the stream at a similar age (within 25 %) it asks the
 * gateway for a heartbeat of 0.4 x that age (at least 1 s); after a 502/503/504, a reset or a timeout
 * of a held poll it halves the poll's hold (at least 1 s) and grows it back x1.25 per clean poll.
 */
export interface ConnectionInfo {
  state: ConnectionState;
  transport: Transport | null;
  /** Whether this is the connection the tabs share. */
  shared: boolean;
  /** The live stream's heartbeat (as its "ready" said), else null. */
  heartbeat_ms: number | null;
  /** While polling: the hold the polls ask now, else null. */
  poll_wait_ms: number | null;
  /** Live connections cut since the client (or, shared, the leading tab's connection) started. */
  cuts: number;
  last_cut: ConnectionCut | null;
}

/** A JSON Schema (draft 2020-12); a tool's parameters have top-level type "object". */
export type JSONSchema = { [key: string]: unknown };

/** Any value JSON can carry. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/** The Web Storage methods the SDK uses to keep its session across reloads. */
export interface SessionStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** What a client may say it runs on when it creates its session. */
export type ClientPlatform = "web" | "android" | "ios" | "desktop" | "other";

export interface ToolgateClientOptions {
  /** The gateway's http(s) URL, e.g. "https://gateway.example". Default: the page's origin. */
  baseUrl?: string;
  /**
   * "auto" (default) starts with SSE and falls back to long-poll when a proxy holds the stream back.
   * "sse" or "poll" forces that transport on a connection of this client's own (never shared).
   */
  transport?: "auto" | Transport;
  /**
   * Whether this client receives its calls over the one connection the tabs of its origin share.
   * Default true: where the platform has Web Locks and BroadcastChannel (browsers) and `transport` is
   * "auto", one tab (elected with the Web Lock "toolgate-leader:" + baseUrl) holds one POST /v1/streams
   * — or POST /v1/poll behind a buffering proxy — for every client of every tab, and passes each event
   * on over the BroadcastChannel "toolgate:" + baseUrl; when it goes (closed, reloaded, frozen, silent
   * for 3 s), another tab takes over within a few seconds and open calls are delivered again. A browser
   * opens at most 6 HTTP/1.1 connections to a host, so a connection per tab starves the tabs' answers.
   * The leading tab uses the fetch and timeouts of its first client. false, or a platform without those
   * APIs (Node), gives the client a connection of its own.
   */
  shareConnection?: boolean;
  /**
   * Where the session (id, token, cursor, unacknowledged answers) is kept.
   * Default: sessionStorage where the platform has one, else memory; null or false keeps it in memory.
   */
  storage?: SessionStorageLike | null | false;
  /**
   * The storage key. Default: "toolgate:" + baseUrl, then ":" + client.name when a name is given,
   * then ":2", ":3"… for the second, third… live client of the same storage with that base, in the
   * order they are made (a closed client's rank goes to the next one made). A page that makes its
   * clients in the same order on every load gets each its own session back after a reload; parts
   * made in an order that can change should each pass their own client.name, or a storageKey
   * (used as given).
   */
  storageKey?: string;
  /** The client key, when the gateway requires one to create sessions. */
  clientKey?: string;
  /** Describes this client to the gateway; each field given replaces the default {name: "toolgate-web", version: VERSION, platform: "web"}. */
  client?: { name?: string; version?: string; platform?: ClientPlatform };
  /** Free-form metadata stored with the session. */
  metadata?: { [key: string]: JSONValue };
  /** The fetch to use; the SDK calls it with a URL string and an init. Default: globalThis.fetch. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** How long a new stream may take to deliver "ready" before auto mode polls instead. Default 3000. */
  sseReadyTimeoutMs?: number;
  /**
   * How long auto mode polls before it probes the stream (GET /v1/sessions/{sid}/probe) and, when the
   * probe streams, goes back to it; doubles after each failed probe. Default 60000. Whatever the
   * probes say, the transport switches at most 4 times in 10 minutes.
   */
  sseRetryMs?: number;
  /** The longest wait between probes of the stream. Default 600000. */
  sseRetryMaxMs?: number;
  /** Silence on a live stream after which it counts as stalled. Default: twice the heartbeat plus 5 s. */
  stallTimeoutMs?: number;
  /**
   * The longest hold of each poll. Default: the gateway's poll wait (the session's poll_wait_ms, or the
   * shared poll's reply). A poll a proxy cuts halves the hold for the origin, whichever the ceiling.
   */
  pollWaitMs?: number;
  /**
   * First delay of the backoff of connection attempts that never went live, and of result retries.
   * Default 250. A connection that went live and then broke is tried again at once (0-250 ms of
   * jitter); a Retry-After is obeyed.
   */
  reconnectBaseMs?: number;
  /** Longest delay of that backoff. Default 10000. */
  reconnectMaxMs?: number;
  /** Where the path's lessons are kept (see ConnectionInfo). Default: localStorage, else memory. */
  pathStorage?: SessionStorageLike;
}

/** What a handler reports with `progress()`: the protocol's usual fields, and any other JSON. */
export interface ProgressReport {
  current?: number;
  total?: number;
  message?: string;
  [key: string]: JSONValue | undefined;
}

/** The gateway's reply to a progress report: the call's new deadline. */
export interface ProgressAck {
  type: "progress_acknowledged";
  id: string;
  /** RFC 3339 time. */
  deadline: string;
}

/** What a handler receives besides the arguments. */
export interface ToolCallContext {
  callId: string;
  name: string;
  /** RFC 3339 time after which the gateway gives up on the call, as it was when the handler started. */
  deadline: string | null;
  /** 1 on first delivery; more when the call was delivered again. */
  attempt: number;
  /** Aborted when the call is cancelled, times out, or the client closes; its reason is a ToolgateError with code "CANCELLED". */
  signal: AbortSignal;
  /**
   * Reports progress (nothing given sends {}); each report pushes the deadline out by the tool's timeout.
   * Resolves to the ack, or null when it could not be sent (the failure is an "error" event).
   */
  progress(progress?: ProgressReport): Promise<ProgressAck | null>;
  /**
   * Records what the call cost (in the unit of the tools' estimatedCost and a run's max_cost), sent with its
   * answer, a result or an error alike; a later report replaces an earlier one. Throws a TypeError for a value
   * that is not a finite number from 0 to 1e12.
   */
  reportCost(cost: number): void;
}

/** How a tool asks for a person's approval of each call. */
export type ApprovalRequirement = "never" | "unless_auto_approved" | "always";

export interface ToolDefinition<Args = any> {
  /** Matches ^[A-Za-z0-9_-]{1,64}$. */
  name: string;
  /** Not blank. */
  description: string;
  /** JSON Schema of the arguments. Default {type: "object", properties: {}}. */
  parameters?: JSONSchema;
  /**
   * What the handler returns becomes the call's output (undefined becomes null; an array of MCP content
   * blocks, such as [{type: "image", data, mimeType}], reaches MCP hosts as those blocks); what it throws becomes a
   * tool_error: a string `code` property is kept, with object `details`, else the code is INTERNAL_ERROR.
   * The gateway accepts only codes matching ^[A-Z][A-Z0-9_]{0,63}$: any other code (say "auth/expired")
   * is sent as INTERNAL_ERROR with the thrown one in `details.original_code`, so the answer is not refused.
   */
  handler(args: Args, context: ToolCallContext): unknown;
  /** A positive integer. */
  timeoutMs?: number;
  /** true means "always", false "never". */
  requiresApproval?: boolean | ApprovalRequirement;
  readOnly?: boolean;
  rateLimit?: { requestsPerMinute?: number; requestsPerHour?: number };
  /** What a call is expected to cost, from 0 to 1e12; a run's budget counts a call at it until it reports its cost. */
  estimatedCost?: number;
  /** How long a call is expected to take, an integer of milliseconds up to a day. */
  estimatedDurationMs?: number;
  /** A name for people to read (MCP hosts show it), at most 256 characters. */
  title?: string;
  /**
   * JSON Schema (top-level type "object") of what the handler returns: MCP hosts see it as the tool's
   * outputSchema and the output as structuredContent; an output that does not match reaches them as an
   * OUTPUT_INVALID error.
   */
  outputSchema?: JSONSchema & { type: "object" };
  /** MCP's hints about the tool (readOnly is readOnlyHint). */
  annotations?: ToolAnnotations;
}

/** MCP's hints about a tool's behaviour; unset is MCP's default. */
export interface ToolAnnotations {
  /** At most 256 characters. */
  title?: string;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A registered tool as sent to the gateway (PROTOCOL.md, register_tools): no handler, the wire's field names. */
export interface WireTool {
  name: string;
  description: string;
  parameters: JSONSchema;
  timeout_ms?: number;
  requires_approval?: ApprovalRequirement;
  read_only?: boolean;
  rate_limit?: { requests_per_minute?: number; requests_per_hour?: number };
  estimated_cost?: number;
  estimated_duration_ms?: number;
  title?: string;
  output_schema?: JSONSchema;
  annotations?: { title?: string; destructive_hint?: boolean; idempotent_hint?: boolean; open_world_hint?: boolean };
}

/** How the gateway judged a tool given to registerTool. */
export type RegistrationOutcome =
  | { registered: true; code?: undefined; message?: undefined }
  | { registered: false; code: string; message: string };

/** A tool the gateway refused, and why. */
export interface ToolRejection {
  name: string;
  code: string;
  message: string;
}

/** A call in a "call" event. After a settled answer (acknowledged, closed, rejected) only its id is known. */
export interface CallInfo {
  id: string;
  name?: string;
  args?: { [key: string]: JSONValue };
  deadline?: string | null;
  attempt?: number;
  receivedAt?: string;
}

/** A call this client received: the "call" event's call while it runs (received, progress, answered, cancelled). */
export interface ReceivedCall extends CallInfo {
  name: string;
  args: { [key: string]: JSONValue };
  /** RFC 3339; moved by each acknowledged progress report. */
  deadline: string | null;
  attempt: number;
  /** ISO 8601 time the client received it. */
  receivedAt: string;
}

export type Answer =
  | { type: "tool_result"; id: string; success: true; output: JSONValue }
  | { type: "tool_error"; id: string; success: false; error: string; code: string; details?: { [key: string]: JSONValue } };

/** The gateway's acknowledgement of an answer. */
export interface AnswerAck {
  type: "result_acknowledged";
  id: string;
  status: "completed" | "failed";
  /** The call already had this answer; nothing changed. */
  duplicate?: boolean;
}

/** Why a running call was cancelled: the gateway's reason, or "client_closed" / "session_closed" / "timeout" decided here. */
export type CancelReason = "timeout" | "cancelled" | "session_closed" | "denied" | "client_closed" | (string & {});

/** The detail of a "call" event; `phase` tells which step of the call it reports. */
export type CallEventDetail =
  | { phase: "received"; call: ReceivedCall }
  | { phase: "progress"; call: ReceivedCall; progress: ProgressReport }
  | { phase: "answered"; call: ReceivedCall; answer: Answer }
  | { phase: "acknowledged"; call: CallInfo; answer: Answer; ack: AnswerAck }
  | { phase: "closed" | "rejected"; call: CallInfo; answer: Answer; error: Error }
  | { phase: "cancelled"; call: ReceivedCall; reason: CancelReason };

/**
 * What the client was doing when an "error" event happened:
 * "connect" — connect() was refused for good (`fatal`), the client closed;
 * "connection" — the connection failed and is retried after a backoff (the error's code
 *   "STREAM_REPLACED" when a newer connection of the same session replaced it: the gateway
 *   keeps a few per session, and the client waits its backoff before it connects again);
 * "stream" — the stream was held back (no "ready", or stalled) and auto mode polls instead;
 * "stream-probe" — a probe of the stream while polling failed (the path still holds streams back);
 * "register" — registering tools failed, or the gateway rejected a tool;
 * "progress" — a progress report could not be sent (`callId`);
 * "result" — posting an answer failed and is retried (`callId`, `attempt`).
 */
export type ErrorDuring = "connect" | "connection" | "stream" | "stream-probe" | "register" | "progress" | "result";

export interface ErrorEventDetail {
  error: Error;
  during: ErrorDuring;
  /** For "progress" and "result": the call concerned. */
  callId?: string;
  /** true for "connect". */
  fatal?: boolean;
  /** For "result": the failed try, counted from 0. */
  attempt?: number;
}

export interface ToolgateEventMap {
  state: { state: ConnectionState; previous: ConnectionState };
  transport: { transport: Transport | null };
  /** Any change of `client.connection`: state, transport, heartbeat, poll hold, a cut. */
  connection: ConnectionInfo;
  /** A live connection was cut (then reconnected at once). */
  cut: ConnectionCut;
  /** A session was created, or one was lost (`lost`, `error`) and is about to be replaced. */
  session: { sessionId: string | null; created: boolean; lost?: boolean; error?: Error };
  call: CallEventDetail;
  registered: { count: number; registered: number; rejected: ToolRejection[] };
  error: ErrorEventDetail;
}

export class ToolgateClient extends EventTarget {
  /** Throws a TypeError for a baseUrl that is not http(s), an unknown transport, a storage without the three methods, or no fetch. */
  constructor(options?: ToolgateClientOptions);
  readonly state: ConnectionState;
  readonly transport: Transport | null;
  /** Whether calls come over the connection the tabs share (see ToolgateClientOptions.shareConnection). */
  readonly sharesConnection: boolean;
  /** What the client knows of its connection now (a fresh object each time). */
  readonly connection: ConnectionInfo;
  readonly sessionId: string | null;
  readonly cursor: number | null;
  /** Without a trailing slash. */
  readonly baseUrl: string;
  /** The registered tools as sent to the gateway (a fresh array each time). */
  readonly tools: WireTool[];
  /** Ids of the calls whose handlers are running now. */
  readonly runningCalls: string[];
  /** Adds a listener that receives the event's detail; returns a function that removes it. */
  on<K extends keyof ToolgateEventMap>(type: K, listener: (detail: ToolgateEventMap[K]) => void): () => void;
  /** The events are CustomEvents whose detail is the one `on` passes. */
  addEventListener<K extends keyof ToolgateEventMap>(
    type: K,
    listener: (event: CustomEvent<ToolgateEventMap[K]>) => void,
    options?: boolean | AddEventListenerOptions,
  ): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof ToolgateEventMap>(
    type: K,
    listener: (event: CustomEvent<ToolgateEventMap[K]>) => void,
    options?: boolean | EventListenerOptions,
  ): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
  /** Registers a tool (or replaces one with the same name); throws a TypeError for a definition it can tell is invalid. Never rejects. */
  registerTool<Args = any>(tool: ToolDefinition<Args>): Promise<RegistrationOutcome>;
  /** Resolves to false when no tool had that name; rejects when, connected, the gateway cannot take the new tool list. */
  unregisterTool(name: string): Promise<boolean>;
  /** Resolves once calls are received; rejects only when the gateway refuses this client for good, or on close() before that. */
  connect(): Promise<void>;
  close(options?: { endSession?: boolean }): Promise<void>;
}

/** An error answered by the gateway, or a transport failure (status 0). */
export class ToolgateError extends Error {
  constructor(code: string, message: string, extra?: { status?: number; details?: object; retryAfterMs?: number; cause?: unknown });
  code: string;
  status: number;
  details?: object;
  retryAfterMs?: number;
  /** Set on the error connect() rejects with when the gateway refused to create the session. */
  fatal?: boolean;
  /** Whether asking again later may succeed (network trouble, 5xx, 429). */
  readonly retryable: boolean;
}

/** The tool-level error codes of the protocol. */
export type ToolErrorCode = "AUTH_REQUIRED" | "PERMISSION_DENIED" | "TOOL_NOT_FOUND" | "INVALID_ARGS" | "RATE_LIMITED" | "INTERNAL_ERROR";

/** Thrown by a handler to answer with a specific code and details. */
export class ToolError extends Error {
  constructor(code: ToolErrorCode | (string & {}), message: string, details?: object);
  code: string;
  details?: object;
}

/** In-memory storage, for `storage` where no Web Storage exists. */
export class MemoryStorage implements SessionStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The tool-level error codes of the protocol (a frozen array). */
export const TOOL_ERROR_CODES: readonly ToolErrorCode[];

/** Incremental text/event-stream parser. */
export class SSEParser {
  /** The last valid `retry:` field seen. */
  retryMs?: number;
  /** Feeds the next piece of the stream; returns the events it completed. */
  push(text: string): { event: string; data: string; id: string | null }[];
}

/** The SDK's version, sent as the session's client version. */
export const VERSION: string;
