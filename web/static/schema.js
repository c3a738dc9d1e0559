// A small JSON Schema checker for the console's call form: it catches the
// usual mistakes (a missing required field, a string where a number belongs,
// a value outside an enum) before the request is sent, so the operator sees
// them next to the form. It covers the keywords tool schemas use in practice;
// the gateway validates every call against the full schema anyway and its
// 422 INVALID_ARGS answer is shown as well. Hand-written because no build
// step is allowed for the page and a full validator is far larger than this.

/**
 * Checks `value` against `schema` and returns a list of problems, each
 * `{path, message}`; an empty list means no problem was found.
 * @param {object|boolean} schema
 * @param {unknown} value
 */
export function validate(schema, value, path = "") {
  const errors = [];
  check(schema, value, path || "(arguments)", errors);
  return errors;
}

function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function matchesType(expected, value) {
  const actual = typeOf(value);
  if (expected === "number") return actual === "number" || actual === "integer";
  return expected === actual;
}

function check(schema, value, path, errors) {
  if (schema === true || schema === undefined || schema === null) return;
  if (schema === false) {
    errors.push({ path, message: "no value is allowed here" });
    return;
  }
  if (typeof schema !== "object") return;
  const before = errors.length;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => matchesType(t, value))) {
      errors.push({ path, message: `must be ${types.join(" or ")}, got ${typeOf(value)}` });
      return;
    }
  }
  if (schema.enum && !schema.enum.some((v) => deepEqual(v, value))) {
    errors.push({ path, message: `must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}` });
  }
  if ("const" in schema && !deepEqual(schema.const, value)) {
    errors.push({ path, message: `must be ${JSON.stringify(schema.const)}` });
  }
  if (typeof value === "string") checkString(schema, value, path, errors);
  if (typeof value === "number") checkNumber(schema, value, path, errors);
  if (Array.isArray(value)) checkArray(schema, value, path, errors);
  if (typeOf(value) === "object") checkObject(schema, value, path, errors);
  for (const sub of schema.allOf ?? []) check(sub, value, path, errors);
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((sub) => validate(sub, value, path).length === 0)) {
    errors.push({ path, message: "matches none of the allowed forms (anyOf)" });
  }
  if (Array.isArray(schema.oneOf)) {
    const matching = schema.oneOf.filter((sub) => validate(sub, value, path).length === 0).length;
    if (matching !== 1) errors.push({ path, message: `must match exactly one allowed form (oneOf), matches ${matching}` });
  }
  return errors.length === before;
}

function checkString(schema, value, path, errors) {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < schema.minLength) {
    errors.push({ path, message: `must have at least ${schema.minLength} characters` });
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    errors.push({ path, message: `must have at most ${schema.maxLength} characters` });
  }
  if (typeof schema.pattern === "string") {
    let re = null;
    try {
      re = new RegExp(schema.pattern, "u");
    } catch {
      // a pattern JavaScript cannot compile is left to the gateway
    }
    if (re && !re.test(value)) errors.push({ path, message: `must match the pattern ${schema.pattern}` });
  }
}

function checkNumber(schema, value, path, errors) {
  if (schema.minimum !== undefined && value < schema.minimum) errors.push({ path, message: `must be ≥ ${schema.minimum}` });
  if (schema.maximum !== undefined && value > schema.maximum) errors.push({ path, message: `must be ≤ ${schema.maximum}` });
  if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) {
    errors.push({ path, message: `must be > ${schema.exclusiveMinimum}` });
  }
  if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) {
    errors.push({ path, message: `must be < ${schema.exclusiveMaximum}` });
  }
  if (schema.multipleOf && Math.abs(value / schema.multipleOf - Math.round(value / schema.multipleOf)) > 1e-9) {
    errors.push({ path, message: `must be a multiple of ${schema.multipleOf}` });
  }
}

function checkArray(schema, value, path, errors) {
  if (schema.minItems !== undefined && value.length < schema.minItems) {
    errors.push({ path, message: `must have at least ${schema.minItems} items` });
  }
  if (schema.maxItems !== undefined && value.length > schema.maxItems) {
    errors.push({ path, message: `must have at most ${schema.maxItems} items` });
  }
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  value.forEach((item, i) => {
    const sub = i < prefix.length ? prefix[i] : schema.items;
    if (sub !== undefined) check(sub, item, `${path}[${i}]`, errors);
  });
  if (schema.uniqueItems) {
    const seen = value.map((v) => JSON.stringify(v));
    if (new Set(seen).size !== seen.length) errors.push({ path, message: "must not repeat items" });
  }
}

function checkObject(schema, value, path, errors) {
  const props = schema.properties ?? {};
  for (const name of schema.required ?? []) {
    if (!(name in value)) errors.push({ path: join(path, name), message: "is required" });
  }
  for (const [name, item] of Object.entries(value)) {
    if (name in props) {
      check(props[name], item, join(path, name), errors);
    } else if (schema.additionalProperties === false) {
      errors.push({ path: join(path, name), message: "is not an allowed property" });
    } else if (typeof schema.additionalProperties === "object") {
      check(schema.additionalProperties, item, join(path, name), errors);
    }
  }
  const count = Object.keys(value).length;
  if (schema.minProperties !== undefined && count < schema.minProperties) {
    errors.push({ path, message: `must have at least ${schema.minProperties} properties` });
  }
  if (schema.maxProperties !== undefined && count > schema.maxProperties) {
    errors.push({ path, message: `must have at most ${schema.maxProperties} properties` });
  }
}

function join(path, name) {
  return path === "(arguments)" ? name : `${path}.${name}`;
}

function deepEqual(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * An example value for a schema, used to pre-fill the call form: the
 * default or first enum value where given, else an empty value of the type;
 * objects list their required properties.
 */
export function skeleton(schema) {
  if (!schema || typeof schema !== "object") return {};
  if ("default" in schema) return schema.default;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type ?? (schema.properties ? "object" : undefined)) {
    case "object": {
      const out = {};
      for (const name of schema.required ?? []) out[name] = skeleton(schema.properties?.[name]);
      return out;
    }
    case "array":
      return [];
    case "string":
      return "";
    case "integer":
    case "number":
      return schema.minimum ?? 0;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return {};
  }
}
