// Cost from the browser SDK: a tool declares its estimate (estimatedCost), a
// handler reports what its call cost with context.reportCost, for a result and
// for a thrown error alike; a returned object that merely has a "cost" key is
// output like any other, and a value that is not a cost is refused at once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ToolgateClient } from "../../static/toolgate.js";
import { sdkFixture } from "../lib/sdk.mjs";

let gw;
const newClient = sdkFixture({ client: { name: "sdk-cost" } }, (g) => {
  gw = g;
});

test("estimatedCost is declared and reportCost's cost is stored with the answer", async () => {
  const client = newClient({ transport: "sse" });
  const refusals = [];
  const tryBad = (ctx) => {
    for (const bad of [-1, Number.NaN, Infinity, 2e12, "1.5", null]) {
      try {
        ctx.reportCost(bad);
        refusals.push(`taken: ${String(bad)}`);
      } catch (err) {
        refusals.push(err instanceof TypeError ? "refused" : `thrown: ${err}`);
      }
    }
  };
  client.registerTool({
    name: "paid",
    description: "A paid lookup",
    estimatedCost: 0.5,
    handler(_args, ctx) {
      tryBad(ctx);
      ctx.reportCost(9); // replaced below
      ctx.reportCost(0.25);
      return { output: "not an envelope", cost: 99 };
    },
  });
  client.registerTool({
    name: "paid_failing",
    description: "Fails after being paid",
    estimatedCost: 0.5,
    handler(_args, ctx) {
      ctx.reportCost(0.125);
      throw new Error("upstream failed");
    },
  });
  await client.connect();

  const tools = await gw.toolsOf(client.sessionId);
  assert.equal(tools.find((t) => t.name === "paid")?.estimated_cost, 0.5, JSON.stringify(tools));

  const paid = await gw.call(client.sessionId, "paid", {}, { timeout_ms: 10000 });
  assert.equal(paid.status, "completed", JSON.stringify(paid));
  assert.deepEqual(paid.output, { output: "not an envelope", cost: 99 }, "a returned cost key is output");
  assert.equal(paid.cost, 0.25);
  assert.equal(paid.estimated_cost, 0.5);
  assert.deepEqual(refusals, Array(6).fill("refused"));

  const failed = await gw.call(client.sessionId, "paid_failing", {}, { timeout_ms: 10000 });
  assert.equal(failed.status, "failed", JSON.stringify(failed));
  assert.equal(failed.cost, 0.125);
});

test("a tool declaring an estimate that is not a cost is refused before any request", () => {
  const client = new ToolgateClient({ baseUrl: "http://127.0.0.1:9", storage: null });
  const handler = () => null;
  for (const estimatedCost of [-1, Number.NaN, 1e13, "2"]) {
    assert.throws(() => client.registerTool({ name: "x", description: "d", handler, estimatedCost }), TypeError);
  }
  assert.throws(() => client.registerTool({ name: "x", description: "d", handler, estimatedDurationMs: 1.5 }), TypeError);
});
