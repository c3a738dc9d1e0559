// Checking a tool definition given to ToolgateClient.registerTool and turning
// it into the wire form of docs/PROTOCOL.md's register_tools.

import { checkCost } from "./toolgate-calls.js";

/** The shape every tool name must have (the gateway may narrow it further). */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The approval requirements a tool may declare. */
export const APPROVALS = ["never", "unless_auto_approved", "always"];

/**
 * Checks a tool definition, throwing a TypeError that names the problem, and
 * returns `{wire, handler}`: the JSON sent to the gateway and the function
 * that runs calls.
 */
export function validateTool(spec) {
  if (!spec || typeof spec !== "object") throw new TypeError("registerTool needs a tool definition object");
  const { name, description, parameters, handler, timeoutMs, requiresApproval } = spec;
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new TypeError(`tool name must match ${TOOL_NAME}, got ${JSON.stringify(name)}`);
  }
  if (typeof description !== "string" || description.trim() === "") {
    throw new TypeError(`tool "${name}" needs a description`);
  }
  if (typeof handler !== "function") throw new TypeError(`tool "${name}" needs a handler function`);
  if (parameters !== undefined && (parameters === null || typeof parameters !== "object" || Array.isArray(parameters))) {
    throw new TypeError(`tool "${name}": parameters must be a JSON Schema object`);
  }
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
    throw new TypeError(`tool "${name}": timeoutMs must be a positive integer`);
  }
  if (spec.estimatedCost !== undefined) checkCost(`tool "${name}": estimatedCost`, spec.estimatedCost);
  const duration = spec.estimatedDurationMs;
  if (duration !== undefined && !(Number.isInteger(duration) && duration >= 0 && duration <= 86400000)) {
    throw new TypeError(`tool "${name}": estimatedDurationMs must be an integer from 0 to 86400000 (a day)`);
  }
  let approval = requiresApproval;
  if (approval === true) approval = "always";
  if (approval === false) approval = "never";
  if (approval !== undefined && !APPROVALS.includes(approval)) {
    throw new TypeError(`tool "${name}": requiresApproval must be true, false or one of ${APPROVALS.join(", ")}`);
  }
  const shown = checkPresentation(name, spec);
  const wire = { name, description, parameters: parameters ?? { type: "object", properties: {} }, ...shown };
  if (timeoutMs !== undefined) wire.timeout_ms = timeoutMs;
  if (approval !== undefined) wire.requires_approval = approval;
  if (spec.readOnly !== undefined) wire.read_only = Boolean(spec.readOnly);
  if (spec.rateLimit) {
    wire.rate_limit = {
      requests_per_minute: spec.rateLimit.requestsPerMinute,
      requests_per_hour: spec.rateLimit.requestsPerHour,
    };
  }
  if (spec.estimatedCost) wire.estimated_cost = spec.estimatedCost;
  if (duration) wire.estimated_duration_ms = duration;
  return { wire, handler };
}


/** The longest title (and annotations.title) a tool may have, in characters. */
const MAX_TITLE_LENGTH = 256;

/** The MCP hints a tool's annotations may give, by their names in a tool definition and on the wire. */
const HINTS = { destructiveHint: "destructive_hint", idempotentHint: "idempotent_hint", openWorldHint: "open_world_hint" };

/**
 * Checks a tool definition's title, outputSchema and annotations, throwing a
 * TypeError that names the problem, and returns their wire fields (title,
 * output_schema, annotations), only those given.
 */
function checkPresentation(name, spec) {
  const wire = {};
  const title = (field, value) => {
    if (typeof value !== "string" || [...value].length > MAX_TITLE_LENGTH) {
      throw new TypeError(`tool "${name}": ${field} must be a string of at most ${MAX_TITLE_LENGTH} characters`);
    }
    return value;
  };
  if (spec.title !== undefined) wire.title = title("title", spec.title);
  const schema = spec.outputSchema;
  if (schema !== undefined) {
    if (schema === null || typeof schema !== "object" || Array.isArray(schema) || schema.type !== "object") {
      throw new TypeError(`tool "${name}": outputSchema must be a JSON Schema object with "type": "object"`);
    }
    wire.output_schema = schema;
  }
  const given = spec.annotations;
  if (given !== undefined) {
    if (given === null || typeof given !== "object" || Array.isArray(given)) {
      throw new TypeError(`tool "${name}": annotations must be an object`);
    }
    const annotations = {};
    for (const [key, value] of Object.entries(given)) {
      if (key === "title") {
        annotations.title = title("annotations.title", value);
      } else if (key in HINTS) {
        if (typeof value !== "boolean") throw new TypeError(`tool "${name}": annotations.${key} must be a boolean`);
        annotations[HINTS[key]] = value;
      } else {
        throw new TypeError(`tool "${name}": annotations.${key} is not one of title, ${Object.keys(HINTS).join(", ")}`);
      }
    }
    wire.annotations = annotations;
  }
  return wire;
}
