// The tools the official MCP conformance suite calls on a server, registered
// by a toolgate client (the browser SDK, here in Node) so that the suite,
// pointed at /mcp/sessions/{sid}, reaches them through the gateway: every
// answer below travels as a toolgate call over the client's real stream.
//
// What a toolgate client can produce: a string output (text content), a
// tool_error (isError with its message as text), progress reports
// (notifications/progress), and a change of its own tool list
// (notifications/tools/list_changed), and an output that is a list of MCP
// content blocks (image, audio, embedded resource), which reaches the host
// as those blocks. What it cannot (log messages, sampling, elicitation) is
// listed in the expected-failures baselines next to this file, each with
// its reason.

import { ToolError } from "../../static/toolgate.js";

/** The text test_simple_text answers, as the scenario's description gives it. */
export const SIMPLE_TEXT = "This is a simple text response for testing.";

/** The message test_error_handling fails with. */
export const ERROR_MESSAGE = "This tool intentionally returns an error for testing";

/** The name of the tool test_trigger_tool_change adds and removes in turn. */
export const CHANGING_TOOL = "test_changing_tool";

/** The json-schema-2020-12 scenario's tool and input schema, word for word. */
export const JSON_SCHEMA_TOOL = "json_schema_2020_12_tool";
const schema2020 = "https://json-schema.org/draft/2020-12/schema";
export const JSON_SCHEMA_2020_12 = {
  $schema: schema2020,
  type: "object",
  $defs: {
    address: {
      $anchor: "addressDef",
      type: "object",
      properties: { street: { type: "string" }, city: { type: "string" } },
    },
  },
  properties: {
    name: { type: "string" },
    address: { $ref: "#/$defs/address" },
    contactMethod: { type: "string", enum: ["phone", "email"] },
    phone: { type: "string" },
    email: { type: "string" },
  },
  allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
  if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
  then: { required: ["phone"] },
  else: { required: ["email"] },
  additionalProperties: false,
};

const noArgs = { type: "object", properties: {} };

/** A 1×1 red PNG, base64, for the image scenarios. */
const RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/** A silent WAV header (no samples), base64, for the audio scenario. */
const SILENT_WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
const image = { type: "image", data: RED_PIXEL_PNG, mimeType: "image/png" };
const resource = { type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } };
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Registers the conformance tools on `client` (before or after connect) and
 * resolves with {name: outcome} once the gateway has judged each one.
 * @param {import("../../static/toolgate.js").ToolgateClient} client
 */
export async function registerConformanceTools(client) {
  const specs = [
    {
      name: "test_simple_text",
      description: "Returns a simple text response (conformance: tools-call-simple-text)",
      parameters: noArgs,
      handler: () => SIMPLE_TEXT,
    },
    {
      name: "test_error_handling",
      description: "Always fails (conformance: tools-call-error)",
      parameters: noArgs,
      handler() {
        throw new ToolError("INTERNAL_ERROR", ERROR_MESSAGE);
      },
    },
    {
      name: "test_tool_with_progress",
      description: "Reports progress 0, 50 and 100 of 100 (conformance: tools-call-with-progress)",
      parameters: noArgs,
      async handler(_args, ctx) {
        // Each report waits for the gateway's ack, then a pause, so three
        // distinct notifications reach the host rather than one coalesced.
        for (const current of [0, 50, 100]) {
          await ctx.progress({ current, total: 100, message: `${current}%` });
          await pause(60);
        }
        return "Progress test completed";
      },
    },
    {
      name: JSON_SCHEMA_TOOL,
      description: "Tool with JSON Schema 2020-12 features (conformance: json-schema-2020-12)",
      parameters: JSON_SCHEMA_2020_12,
      handler: (args) => `Received ${JSON.stringify(args)}`,
    },
    {
      name: "test_image_content",
      description: "Answers with an image (conformance: tools-call-image)",
      parameters: noArgs,
      handler: () => [image],
    },
    {
      name: "test_audio_content",
      description: "Answers with audio (conformance: tools-call-audio)",
      parameters: noArgs,
      handler: () => [{ type: "audio", data: SILENT_WAV, mimeType: "audio/wav" }],
    },
    {
      name: "test_embedded_resource",
      description: "Answers with an embedded resource (conformance: tools-call-embedded-resource)",
      parameters: noArgs,
      handler: () => [resource],
    },
    {
      name: "test_multiple_content_types",
      description: "Answers with text, an image and a resource (conformance: tools-call-mixed-content)",
      parameters: noArgs,
      handler: () => [{ type: "text", text: "Multiple content types test:" }, image, resource],
    },
    {
      name: "test_logging_tool",
      description: "Answers without logging (conformance: server-stateless, no log without a log level)",
      parameters: noArgs,
      handler: () => "No log messages were sent",
    },
    {
      name: "test_trigger_tool_change",
      description: `Adds ${CHANGING_TOOL} to this client's tools, or removes it (conformance: server-stateless, list_changed)`,
      parameters: noArgs,
      async handler() {
        if (client.tools.some((t) => t.name === CHANGING_TOOL)) {
          await client.unregisterTool(CHANGING_TOOL);
          return `${CHANGING_TOOL} removed`;
        }
        const outcome = await client.registerTool(changingTool);
        if (!outcome.registered) throw new ToolError("INTERNAL_ERROR", `${CHANGING_TOOL} was refused: ${outcome.message}`);
        return `${CHANGING_TOOL} added`;
      },
    },
  ];
  const outcomes = await Promise.all(specs.map((spec) => client.registerTool(spec)));
  return Object.fromEntries(specs.map((spec, i) => [spec.name, outcomes[i]]));
}

const changingTool = {
  name: CHANGING_TOOL,
  description: "Comes and goes with each call of test_trigger_tool_change",
  parameters: noArgs,
  handler: () => "here",
};
