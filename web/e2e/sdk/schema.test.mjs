// Unit tests of the console's argument checker (web/static/schema.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { validate, skeleton } from "../../static/schema.js";

const askUser = {
  type: "object",
  properties: {
    question: { type: "string", minLength: 1 },
    choices: { type: "array", items: { type: "string" }, maxItems: 2 },
    level: { type: "integer", minimum: 1, maximum: 3 },
    mode: { enum: ["a", "b"] },
  },
  required: ["question"],
  additionalProperties: false,
};

test("accepts valid arguments", () => {
  assert.deepEqual(validate(askUser, { question: "Why?", choices: ["x"], level: 2, mode: "a" }), []);
});

test("reports each problem with its path", () => {
  const problems = validate(askUser, { choices: ["x", 3, "z"], level: 1.5, mode: "c", extra: true });
  const byPath = Object.fromEntries(problems.map((p) => [p.path, p.message]));
  assert.match(byPath.question, /required/);
  assert.match(byPath["choices[1]"], /must be string/);
  assert.match(byPath.choices, /at most 2/);
  assert.match(byPath.level, /must be integer/);
  assert.match(byPath.mode, /one of/);
  assert.match(byPath.extra, /not an allowed property/);
});

test("top-level type mismatch and number bounds", () => {
  assert.match(validate(askUser, [])[0].message, /must be object, got array/);
  assert.match(validate(askUser, { question: "q", level: 9 })[0].message, /≤ 3/);
  assert.deepEqual(validate({ type: "number" }, 3), [], "an integer is a number");
  assert.deepEqual(validate({ type: ["string", "null"] }, null), []);
});

test("anyOf / oneOf", () => {
  const s = { oneOf: [{ type: "string" }, { type: "integer" }] };
  assert.deepEqual(validate(s, 1), []);
  assert.equal(validate(s, 1.5).length, 1);
  assert.equal(validate({ anyOf: [{ minimum: 5 }, { maximum: 1 }] }, 3).length, 1);
});

test("skeleton fills required properties with empty values of their type", () => {
  assert.deepEqual(skeleton(askUser), { question: "" });
  assert.deepEqual(skeleton({ type: "object", properties: { n: { type: "integer", minimum: 2 }, m: { enum: ["x"] } }, required: ["n", "m"] }), {
    n: 2,
    m: "x",
  });
  assert.deepEqual(skeleton(undefined), {});
});
