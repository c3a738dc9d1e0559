// Starts a real toolgate gateway process for the tests: a fresh SQLite file in
// a temp dir, an address chosen by the kernel (127.0.0.1:0), and the agent
// key given on the command line so the tests know it. The binary is
// $TOOLGATE_BIN (run.sh builds it), or built once here with `go build`.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
let builtBinary = null;

/** The gateway binary: $TOOLGATE_BIN, or one built from this checkout. */
export function gatewayBinary() {
  if (process.env.TOOLGATE_BIN) {
    if (!existsSync(process.env.TOOLGATE_BIN)) throw new Error(`TOOLGATE_BIN=${process.env.TOOLGATE_BIN} does not exist`);
    return process.env.TOOLGATE_BIN;
  }
  if (!builtBinary) {
    builtBinary = join(mkdtempSync(join(tmpdir(), "toolgate-bin-")), "toolgate");
    execFileSync("go", ["build", "-o", builtBinary, "./cmd/toolgate"], { cwd: repoRoot, stdio: "inherit" });
  }
  return builtBinary;
}

/**
 * Starts `toolgate serve` and waits for its "serving on" line.
 * @param {{agentKey?: string, args?: string[], dir?: string}} [opts]
 * @returns {Promise<Gateway>}
 */
export async function startGateway(opts = {}) {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "toolgate-e2e-"));
  const agentKey = opts.agentKey ?? "e2e-agent-key-0123456789";
  const gateway = new Gateway({ dir, agentKey, args: opts.args ?? [] });
  await gateway.start();
  return gateway;
}

/** A running gateway process and helpers to use its caller API. */
export class Gateway {
  constructor({ dir, agentKey, args }) {
    Object.assign(this, { dir, agentKey, args, db: join(dir, "toolgate.db"), url: null, proc: null, output: [] });
  }

  /**
   * Starts the process (again, on the same database after stop()); on the
   * address `this.addr` when set (to restart on the same port), else on one
   * the kernel picks.
   */
  async start() {
    const argv = ["serve", "--addr", this.addr ?? "127.0.0.1:0", "--db", this.db, "--agent-key", this.agentKey, ...this.args];
    const proc = spawn(gatewayBinary(), argv, { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    const log = (line) => {
      this.output.push(line);
      if (this.output.length > 400) this.output.shift();
    };
    createInterface({ input: proc.stderr }).on("line", log);
    this.url = await new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`the gateway did not print its address in 20 s:\n${this.output.join("\n")}`)), 20000);
      createInterface({ input: proc.stdout }).on("line", (line) => {
        log(line);
        const match = /^toolgate serving on (https?:\/\/\S+)/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolvePromise(match[1].replace(/\/+$/, ""));
        }
      });
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the gateway exited (${code ?? signal}) before serving:\n${this.output.join("\n")}`));
      });
    });
    return this;
  }

  /** Stops the process (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  async stop() {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }

  /** The host:port the gateway listens on. */
  get hostPort() {
    return new URL(this.url).host;
  }

  /** Calls the caller API with the agent key; returns {status, body}. */
  async api(path, { method = "GET", body, headers = {} } = {}) {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.agentKey}`, ...(body === undefined && method !== "POST" ? {} : { "Content-Type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed };
  }

  /** POST /v1/calls and return the call record; throws on any status but 200/202. */
  async call(sessionId, tool, args = {}, extra = {}) {
    const { status, body } = await this.api("/v1/calls", { method: "POST", body: { session_id: sessionId, tool, args, ...extra } });
    if (status !== 200 && status !== 202) throw new Error(`POST /v1/calls answered ${status}: ${JSON.stringify(body)}`);
    return body;
  }

  /** GET /v1/calls/{id}?wait_ms= until the call is final (or `timeoutMs` passes). */
  async waitForCall(id, timeoutMs = 20000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const left = Math.max(0, Math.min(10000, end - Date.now()));
      const { status, body } = await this.api(`/v1/calls/${id}?wait_ms=${left}`);
      if (status !== 200) throw new Error(`GET /v1/calls/${id} answered ${status}: ${JSON.stringify(body)}`);
      if (["completed", "failed", "timed_out", "cancelled", "denied"].includes(body.status) || Date.now() >= end) return body;
    }
  }

  /** The tools of one session, from GET /api/tools?session_id=. */
  async toolsOf(sessionId) {
    const { status, body } = await this.api(`/api/tools?session_id=${encodeURIComponent(sessionId)}`);
    if (status !== 200) throw new Error(`GET /api/tools answered ${status}: ${JSON.stringify(body)}`);
    return body.tools;
  }

  /** The last lines the process printed, for failure messages. */
  get log() {
    return this.output.join("\n");
  }
}
