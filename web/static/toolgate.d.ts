// Type declarations for toolgate.js, the toolgate browser SDK.

/** Where the connection is. */
export type ConnectionState = "idle" | "connecting" | "connected" | "reconnecting" | "closed";

/** How calls are received: a Server-Sent Events stream or a long-poll. */
export type Transport = "sse" | "poll";

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

export interface ToolgateClientOptions {
  /** The gateway's URL, e.g. "https://gateway.example". Default: the page's origin. */
  baseUrl?: string;
  /** "auto" (default) starts with SSE and falls back to long-poll when a proxy holds the stream back. */
  transport?: "auto" | Transport;
  /** Where the session (id, token, cursor, unacknowledged answers) is kept. Default: sessionStorage; null keeps it in memory. */
  storage?: SessionStorageLike | null;
  /** The storage key. Default: "toolgate:" + baseUrl. */
  storageKey?: string;
  /** The client key, when the gateway requires one to create sessions. */
  clientKey?: string;
  /** Describes this client to the gateway. Default: {name: "toolgate-web", version, platform: "web"}. */
  client?: { name?: string; version?: string; platform?: "web" | "android" | "ios" | "desktop" | "other" };
  /** Free-form metadata stored with the session. */
  metadata?: { [key: string]: JSONValue };
  /** The fetch to use. Default: globalThis.fetch. */
  fetch?: typeof fetch;
  /** How long a new stream may take to deliver "ready" before auto mode polls instead. Default 5000. */
  sseReadyTimeoutMs?: number;
  /** How long auto mode polls before trying the stream again; doubles after each failed try. Default 60000. */
  sseRetryMs?: number;
  /** The longest wait between tries of the stream. Default 600000. */
  sseRetryMaxMs?: number;
  /** Silence on a live stream after which it counts as stalled. Default: twice the heartbeat plus 5 s. */
  stallTimeoutMs?: number;
  /** How long each poll is held by the gateway. Default: the session's poll_wait_ms. */
  pollWaitMs?: number;
  /** First delay of the reconnect and result-retry backoff. Default 500. */
  reconnectBaseMs?: number;
  /** Longest delay of that backoff. Default 30000. */
  reconnectMaxMs?: number;
}

/** What a handler receives besides the arguments. */
export interface ToolCallContext {
  callId: string;
  name: string;
  /** RFC 3339 time after which the gateway gives up on the call. */
  deadline: string | null;
  /** 1 on first delivery; more when the call was delivered again. */
  attempt: number;
  /** Aborted when the call is cancelled, times out, or the client closes. */
  signal: AbortSignal;
  /** Reports progress; each report pushes the deadline out by the tool's timeout. Resolves to the ack, or null when it could not be sent. */
  progress(progress: { current?: number; total?: number; message?: string; [key: string]: JSONValue | undefined }): Promise<{ type: "progress_acknowledged"; id: string; deadline: string } | null>;
}

export interface ToolDefinition<Args = any> {
  /** Matches ^[A-Za-z0-9_-]{1,64}$. */
  name: string;
  description: string;
  /** JSON Schema of the arguments. Default {type: "object", properties: {}}. */
  parameters?: JSONSchema;
  /** What the handler returns becomes the call's output; what it throws becomes a tool_error (a `code` property is kept, with `details`). */
  handler(args: Args, context: ToolCallContext): unknown | Promise<unknown>;
  timeoutMs?: number;
  /** true means "always", false "never". */
  requiresApproval?: boolean | "never" | "unless_auto_approved" | "always";
  readOnly?: boolean;
  rateLimit?: { requestsPerMinute?: number; requestsPerHour?: number };
}

export interface RegistrationOutcome {
  registered: boolean;
  code?: string;
  message?: string;
}

export interface CallInfo {
  id: string;
  name?: string;
  args?: { [key: string]: JSONValue };
  deadline?: string | null;
  attempt?: number;
  receivedAt?: string;
}

export type Answer =
  | { type: "tool_result"; id: string; success: true; output: JSONValue }
  | { type: "tool_error"; id: string; success: false; error: string; code: string; details?: { [key: string]: JSONValue } };

/** The detail of a "call" event; `phase` tells which step of the call it reports. */
export type CallEventDetail =
  | { phase: "received"; call: CallInfo }
  | { phase: "progress"; call: CallInfo; progress: object }
  | { phase: "answered"; call: CallInfo; answer: Answer }
  | { phase: "acknowledged"; call: CallInfo; answer: Answer; ack: object }
  | { phase: "closed" | "rejected"; call: CallInfo; answer: Answer; error: Error }
  | { phase: "cancelled"; call: CallInfo; reason: string };

export interface ToolgateEventMap {
  state: { state: ConnectionState; previous: ConnectionState };
  transport: { transport: Transport | null };
  session: { sessionId: string | null; created: boolean; lost?: boolean; error?: Error };
  call: CallEventDetail;
  registered: { count: number; registered: number; rejected: { name: string; code: string; message: string }[] };
  error: { error: Error; during: string; callId?: string; fatal?: boolean; attempt?: number };
}

export class ToolgateClient extends EventTarget {
  constructor(options?: ToolgateClientOptions);
  readonly state: ConnectionState;
  readonly transport: Transport | null;
  readonly sessionId: string | null;
  readonly cursor: number | null;
  readonly baseUrl: string;
  readonly tools: { name: string; description: string; parameters: JSONSchema }[];
  readonly runningCalls: string[];
  on<K extends keyof ToolgateEventMap>(type: K, listener: (detail: ToolgateEventMap[K]) => void): () => void;
  registerTool<Args = any>(tool: ToolDefinition<Args>): Promise<RegistrationOutcome>;
  unregisterTool(name: string): Promise<boolean>;
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
  readonly retryable: boolean;
}

/** Thrown by a handler to answer with a specific code and details. */
export class ToolError extends Error {
  constructor(code: string, message: string, details?: object);
  code: string;
  details?: object;
}

/** In-memory storage, for `storage` where no Web Storage exists. */
export class MemoryStorage implements SessionStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The tool-level error codes of the protocol. */
export const TOOL_ERROR_CODES: readonly string[];

/** Incremental text/event-stream parser. */
export class SSEParser {
  retryMs?: number;
  push(text: string): { event: string; data: string; id: string | null }[];
}

export const VERSION: string;
