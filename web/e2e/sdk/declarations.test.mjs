// toolgate.d.ts against the JavaScript it declares, for what `tsc` cannot see
// (it reads only the declarations): every export of toolgate.js is declared
// and used by types/usage.ts, and the closed sets of strings the SDK emits
// or accepts are the ones the declarations list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import * as sdk from "../../static/toolgate.js";
import { APPROVALS } from "../../static/toolgate-tools.js";

const staticDir = new URL("../../static/", import.meta.url);
const declarations = await readFile(new URL("toolgate.d.ts", staticDir), "utf8");
const usage = await readFile(new URL("../types/usage.ts", import.meta.url), "utf8");
const sources = await Promise.all(
  ["toolgate.js", "toolgate-calls.js", "toolgate-http.js", "toolgate-lane.js", "toolgate-multi.js", "toolgate-path.js", "toolgate-reconnect.js", "toolgate-tabs.js", "toolgate-tools.js", "toolgate-transport.js"].map((f) =>
    readFile(new URL(f, staticDir), "utf8"),
  ),
);
const source = sources.join("\n");

/** The string literals of `export type <name> = "a" | "b" ...;` in the declarations. */
function declaredUnion(name) {
  const match = new RegExp(`export type ${name} =([^;]*);`).exec(declarations);
  assert.ok(match, `toolgate.d.ts declares ${name}`);
  return [...match[1].matchAll(/"([^"]*)"/g)].map((m) => m[1]).sort();
}

/** Every distinct first capture of `re` in the SDK's sources. */
function inSources(re) {
  return [...new Set([...source.matchAll(re)].map((m) => m[1]))].sort();
}

test("every export of toolgate.js is declared, and used by types/usage.ts", () => {
  const exported = Object.keys(sdk).sort();
  const declared = [...declarations.matchAll(/^export (?:declare )?(?:class|const|function) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, exported);
  const valueImport = /import \{([^}]*)\} from "\.\.\/\.\.\/static\/toolgate\.js";/.exec(usage);
  assert.ok(valueImport, "usage.ts imports the SDK's values");
  const used = valueImport[1].split(",").map((s) => s.trim()).filter(Boolean).sort();
  assert.deepEqual(used, exported);
});

test("the error event's `during` values are the ones the SDK emits", () => {
  const emitted = inSources(/during: "([^"]+)"/g);
  assert.ok(emitted.length >= 7, `found ${emitted}`);
  assert.deepEqual(declaredUnion("ErrorDuring"), emitted);
});

test("the call event's phases are the ones the SDK emits", () => {
  const emitted = [...inSources(/phase: "([^"]+)"/g), ...inSources(/#settle\(answer, "([^"]+)"/g)].sort();
  const declared = [...new Set([...declarations.matchAll(/phase: ([^;]*);/g)].flatMap((m) => [...m[1].matchAll(/"([^"]*)"/g)].map((q) => q[1])))].sort();
  assert.deepEqual(declared, emitted);
});

test("the cut reasons are the ones the SDK gives", async () => {
  const { pollCutReason } = await import("../../static/toolgate-lane.js");
  const { ToolgateError } = sdk;
  const stream = inSources(/"STREAM_[A-Z]+" \? "([a-z]+)"/g);
  const streamDefault = inSources(/"STREAM_ENDED" \? "ended" : "([a-z]+)"/g);
  const poll = [502, 503, 504, 0].map((status) => pollCutReason(new ToolgateError("X", "x", { status }), 10000, 5000, false));
  poll.push(pollCutReason(new ToolgateError("X", "x"), 10000, 5000, true));
  assert.deepEqual(declaredUnion("CutReason"), [...new Set([...stream, ...streamDefault, ...poll])].sort());
});

test("the tool error codes and approval requirements are the SDK's", () => {
  assert.deepEqual(declaredUnion("ToolErrorCode"), [...sdk.TOOL_ERROR_CODES].sort());
  assert.deepEqual(declaredUnion("ApprovalRequirement"), [...APPROVALS].sort());
});
