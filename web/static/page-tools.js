// The tools the gateway's page provides. Each needs a browser: the page's own
// state, the person looking at it, the selection, the device's location.

import { ToolError } from "./toolgate.js";
import { $, el, timeOf } from "./dom.js";

/**
 * The page's address as the page reports it (in its session's metadata and
 * from page_info): without the fragment, which may carry the operator's
 * `#agent_key=` (the console takes it out of the address bar only once it
 * starts) and is nobody's business but the page's.
 */
export function pageAddress() {
  return location.origin + location.pathname + location.search;
}

/** The tool definitions, ready for ToolgateClient.registerTool. */
export function browserTools() {
  return [pageInfo, askUser, getSelection, getLocation];
}

const pageInfo = {
  name: "page_info",
  description:
    "Describe the browser page this client runs in: title, URL, viewport size, language, time zone and whether it is visible.",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  readOnly: true,
  handler() {
    return {
      title: document.title,
      url: pageAddress(),
      viewport: { width: window.innerWidth, height: window.innerHeight, device_pixel_ratio: window.devicePixelRatio },
      language: navigator.language,
      languages: [...(navigator.languages ?? [])],
      time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      visibility: document.visibilityState,
    };
  },
};

const askUser = {
  name: "ask_user",
  description:
    "Put a question to the person in front of this page and return their answer. Offer choices to show them as buttons.",
  parameters: {
    type: "object",
    properties: {
      question: { type: "string", minLength: 1, maxLength: 2000, description: "What to ask, in one or two sentences." },
      choices: { type: "array", items: { type: "string" }, maxItems: 8, description: "Optional answers to offer as buttons." },
      placeholder: { type: "string", description: "Optional hint shown in the empty answer field." },
    },
    required: ["question"],
    additionalProperties: false,
  },
  timeoutMs: 120000,
  handler(args, { signal, deadline }) {
    return new Promise((resolve, reject) => {
      const form = $("#question-template").content.firstElementChild.cloneNode(true);
      $('[data-role="text"]', form).textContent = args.question;
      $('[data-role="deadline"]', form).textContent = deadline ? `answer by ${timeOf(deadline)}` : "";
      const input = $('input[name="answer"]', form);
      if (args.placeholder) input.placeholder = args.placeholder;
      const finish = (fn) => {
        form.remove();
        signal.removeEventListener("abort", onAbort);
        fn();
      };
      const answer = (text, how) => finish(() => resolve({ answer: text, answered_with: how }));
      for (const choice of args.choices ?? []) {
        $('[data-role="choices"]', form).append(
          el("button", { type: "button", class: "secondary", onclick: () => answer(choice, "choice") }, choice),
        );
      }
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (input.value.trim() === "") {
          input.focus();
          return;
        }
        answer(input.value, "text");
      });
      $('[data-role="decline"]', form).addEventListener("click", () =>
        finish(() => reject(new ToolError("PERMISSION_DENIED", "The person declined to answer"))),
      );
      const onAbort = () => finish(() => reject(signal.reason));
      signal.addEventListener("abort", onAbort, { once: true });
      $("#questions").append(form);
      input.focus();
    });
  },
};

const getSelection = {
  name: "get_selection",
  description: "Return the text the person has selected on this page (empty when nothing is selected).",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  readOnly: true,
  handler() {
    const text = String(window.getSelection?.() ?? "");
    return { text, length: text.length };
  },
};

const getLocation = {
  name: "get_location",
  description:
    "Ask the browser for the device's location (latitude, longitude, accuracy in metres). The person is asked for permission first.",
  parameters: {
    type: "object",
    properties: { high_accuracy: { type: "boolean", description: "Ask for GPS-grade accuracy (slower)." } },
    additionalProperties: false,
  },
  timeoutMs: 60000,
  requiresApproval: "unless_auto_approved",
  handler(args, { signal }) {
    if (!navigator.geolocation) throw new ToolError("INTERNAL_ERROR", "This browser has no geolocation");
    return new Promise((resolve, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      navigator.geolocation.getCurrentPosition(
        (pos) =>
          resolve({
            latitude: pos.coords.latitude,
            longitude: pos.coords.longitude,
            accuracy_m: pos.coords.accuracy,
            time: new Date(pos.timestamp).toISOString(),
          }),
        (err) => {
          if (err.code === err.PERMISSION_DENIED) {
            reject(
              new ToolError("PERMISSION_DENIED", "The person or the browser refused access to the location", {
                resolution_hint: "Allow location access for this site in the browser's address bar, then ask again.",
              }),
            );
          } else {
            reject(new ToolError("INTERNAL_ERROR", `The location is not available: ${err.message}`));
          }
        },
        { enableHighAccuracy: Boolean(args.high_accuracy), timeout: 50000, maximumAge: 60000 },
      );
    });
  },
};
