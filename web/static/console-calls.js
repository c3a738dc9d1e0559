// The console's call panels: calls waiting for approval (approve / deny) and
// the call history with its filters and paging.

import { $, el, formatDuration, formatJSON, shortId, showError, timeOf } from "./dom.js";

/**
 * Wires the approvals and history panels. `api(path, opts)` calls the caller
 * API with the agent key; `state` holds the tools and sessions the console
 * loaded. Returns `{refresh(state)}`, called on every console refresh.
 */
export function startCallPanels({ api, state }) {
  const filters = $("#history-filters");
  const olderButton = $('[data-role="older"]');
  let nextBefore = null;
  let pagedBack = false;

  filters.addEventListener("change", () => loadHistory(false));
  filters.addEventListener("submit", (event) => event.preventDefault());
  filters.elements.tool.addEventListener("input", debounce(() => loadHistory(false), 300));
  olderButton.addEventListener("click", () => loadHistory(true));

  async function loadHistory(older) {
    const query = new URLSearchParams();
    for (const name of ["session_id", "tool", "status", "limit"]) {
      const value = filters.elements[name].value.trim();
      if (value) query.set(name, value);
    }
    if (older && nextBefore) query.set("before", nextBefore);
    try {
      const page = await api(`/v1/calls?${query}`);
      const calls = Array.isArray(page?.calls) ? page.calls : [];
      const tbody = $('[data-testid="history-table"] tbody');
      const rows = calls.map(historyRow);
      if (older) tbody.append(...rows);
      else tbody.replaceChildren(...rows);
      if (!older && calls.length === 0) {
        tbody.replaceChildren(el("tr", {}, el("td", { colspan: 5, class: "empty" }, "No call matches these filters.")));
      }
      nextBefore = page?.next_before ?? null;
      pagedBack = older;
      olderButton.hidden = !nextBefore;
      showError($('[data-role="history-error"]'), "");
    } catch (err) {
      showError($('[data-role="history-error"]'), `Cannot load the history: ${err.message}`);
    }
  }

  async function loadApprovals() {
    const list = $('[data-role="approval-list"]');
    try {
      const page = await api("/v1/calls?status=awaiting_approval&limit=50");
      const calls = Array.isArray(page?.calls) ? page.calls : [];
      list.replaceChildren(...calls.map((call) => approvalItem(call, state)));
      $('[data-role="approval-count"]').textContent = String(calls.length);
      $('[data-role="approval-empty"]').hidden = calls.length > 0;
      showError($('[data-role="approval-error"]'), "");
    } catch (err) {
      showError($('[data-role="approval-error"]'), `Cannot load the calls waiting for approval: ${err.message}`);
    }
  }

  function approvalItem(call) {
    const error = el("p", { class: "error", hidden: true });
    const decide = async (verdict, button) => {
      button.disabled = true;
      try {
        await api(`/v1/calls/${encodeURIComponent(call.id)}/${verdict}`, { method: "POST", body: {} });
        await loadApprovals();
        await loadHistory(false);
      } catch (err) {
        showError(error, `Could not ${verdict} the call: ${err.code} — ${err.message}`);
        button.disabled = false;
      }
    };
    return el("li", { class: "approval", dataset: { callId: call.id } }, [
      el("div", { class: "call-head" }, [
        el("code", {}, call.tool),
        el("span", { class: "muted small" }, `session ${shortId(call.session_id)} · ${timeOf(call.created_at)}`),
      ]),
      el("pre", {}, formatJSON(call.args ?? {})),
      el("div", { class: "row" }, [
        el("button", { type: "button", onclick: (e) => decide("approve", e.currentTarget) }, "Approve"),
        el("button", { type: "button", class: "danger", onclick: (e) => decide("deny", e.currentTarget) }, "Deny"),
      ]),
      error,
    ]);
  }

  function fillSessionFilter() {
    const select = filters.elements.session_id;
    const current = select.value;
    const ids = new Set([...state.sessions.keys()]);
    for (const tool of state.tools) if (tool.source?.session_id) ids.add(tool.source.session_id);
    select.replaceChildren(
      el("option", { value: "" }, "all sessions"),
      ...[...ids].map((id) => {
        const name = state.sessions.get(id)?.client?.name;
        return el("option", { value: id }, `${name ? `${name} · ` : ""}${shortId(id)}`);
      }),
    );
    if (ids.has(current)) select.value = current;
  }

  return {
    async refresh(next) {
      state = next;
      fillSessionFilter();
      await loadApprovals();
      // Keep older pages the operator is reading; refresh only the newest page.
      if (!pagedBack) await loadHistory(false);
    },
  };
}

function historyRow(call) {
  let summary = "";
  if (call.error) summary = `${call.error.code}: ${call.error.message}`;
  else if (call.output !== undefined && call.output !== null) summary = JSON.stringify(call.output);
  const details = el("tr", { class: "details", hidden: true }, el("td", { colspan: 5 }, el("pre", {}, JSON.stringify(call, null, 2))));
  const row = el(
    "tr",
    {
      class: "clickable",
      dataset: { callId: call.id, status: call.status },
      title: "Show the whole record",
      onclick: () => {
        details.hidden = !details.hidden;
      },
    },
    [
      el("td", { class: "small" }, timeOf(call.created_at)),
      el("td", {}, [el("code", {}, call.tool), el("div", { class: "muted small" }, call.session_id ? `session ${shortId(call.session_id)}` : "built-in")]),
      el("td", {}, el("span", { class: "chip", dataset: { status: call.status } }, call.status)),
      el("td", { class: "small" }, formatDuration(call.duration_ms)),
      el("td", { class: "small" }, el("div", { class: "clamp" }, summary)),
    ],
  );
  const fragment = document.createDocumentFragment();
  fragment.append(row, details);
  return fragment;
}

function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
