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
  const wire = { name, description, parameters: parameters ?? { type: "object", properties: {} } };
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

