// memci inspector (docs/inspector.md): static pages over memci's REST API.
//
// Invariants: stored text is only ever shown as text (text nodes; no HTML is ever parsed
// from a string), so a message holding markup cannot run; the API key lives in this tab's
// sessionStorage and travels as an Authorization header, never in a URL; every list is
// read a page at a time, so a 100k-session tenant or a 2,000-page session stays light.
"use strict";

const KEY = "memci.key";
const ARTIFACT = /artifact:([0-9a-f]{12,64})/g;
const SEGMENTS = ["system", "tools", "state", "contents", "recent", "retrieval"];
const TEXT_SHOWN = 4000; // characters of a message shown before "show all"
const lastPeek = new Map(); // session -> the previous peek in this tab (what changed)

// -- talking to the server ------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(path, method) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = "Bearer " + key;
  const response = await fetch(path, { method: method || "GET", headers, cache: "no-store",
                                       credentials: "omit", referrerPolicy: "no-referrer" });
  let body = null;
  try { body = await response.json(); } catch (err) { body = null; }
  if (!response.ok) {
    const error = body && body.error ? body.error : { code: "http_error",
                                                      message: response.statusText };
    throw new ApiError(response.status, error.code, error.message);
  }
  return body;
}

const q = (params) => new URLSearchParams(
  Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== "")
).toString();
const sessionPath = (sid) => "/v1/sessions/" + encodeURIComponent(sid);

// -- building the page (text only) --------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const view = () => document.getElementById("view");
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
const num = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"));

function failure(err) {
  if (err instanceof ApiError && err.status === 401) { showSignIn(err.message); return null; }
  return el("p", { class: "error", role: "alert" }, err.message || String(err));
}

function show(...children) {
  view().replaceChildren(...children);
}

// -- sign-in ----------------------------------------------------------------------------

function showSignIn(message) {
  document.getElementById("signin").hidden = false;
  document.getElementById("signin-error").textContent = message || "";
  document.getElementById("signout").hidden = true;
  show();
  document.getElementById("key").focus();
}

async function signIn(event) {
  event.preventDefault();
  const input = document.getElementById("key");
  sessionStorage.setItem(KEY, input.value.trim());
  input.value = "";
  try {
    await api("/v1/ui/sessions?limit=1");
  } catch (err) {
    sessionStorage.removeItem(KEY);
    showSignIn(err.message);
    return;
  }
  signedIn();
}

function signedIn() {
  document.getElementById("signin").hidden = true;
  const keyed = Boolean(sessionStorage.getItem(KEY));
  document.getElementById("signout").hidden = !keyed;
  document.getElementById("who").textContent = keyed ? "signed in with an API key"
                                                      : "local store (no key needed)";
  route();
}

function signOut() {
  sessionStorage.removeItem(KEY);
  location.hash = "#/";
  showSignIn("");
}

// -- routing: #/ (sessions) and #/s/<name> (a session) -------------------------------------

function route() {
  if (!document.getElementById("signin").hidden) return;
  const hash = location.hash || "#/";
  if (hash.startsWith("#/s/")) {
    let sid;
    try { sid = decodeURIComponent(hash.slice(4)); } catch (err) { sid = hash.slice(4); }
    showSession(sid);
  } else {
    showSessions();
  }
}

// -- the sessions ---------------------------------------------------------------------

function showSessions() {
  const search = el("input", { id: "session-q", type: "search", placeholder: "name or user",
                               "aria-label": "search sessions" });
  const rows = el("tbody", { id: "sessions" });
  const more = el("button", { id: "sessions-more", type: "button", hidden: true }, "More");
  const note = el("p", { class: "muted", id: "sessions-note" });
  let after = 0;

  async function load(fresh) {
    if (fresh) { rows.replaceChildren(); after = 0; }
    try {
      const data = await api("/v1/ui/sessions?" + q({ limit: 50, after, q: search.value.trim() }));
      for (const s of data.sessions) rows.append(sessionRow(s));
      after = data.next_after;
      more.hidden = after === null;
      note.textContent = rows.children.length ? "" : (after === null ? "No sessions."
        : "None found yet: More reads further.");
    } catch (err) {
      const shown = failure(err);
      if (shown) note.replaceChildren(shown);
    }
  }

  const form = el("form", { onsubmit: (e) => { e.preventDefault(); load(true); } },
                  search, el("button", { type: "submit" }, "Search"));
  more.addEventListener("click", () => load(false));
  show(el("h1", {}, "Sessions"), form,
       el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "session"), el("th", {}, "user"),
          el("th", { class: "num" }, "messages"), el("th", {}, "last activity"),
          el("th", {}, "created"))), rows), note, more);
  load(true);
}

function sessionRow(s) {
  const link = el("a", { href: "#/s/" + encodeURIComponent(s.session), class: "session-link" },
                  s.session);
  return el("tr", {}, el("td", {}, link), el("td", {}, s.user || "—"),
            el("td", { class: "num" }, num(s.messages)), el("td", {}, when(s.last_activity)),
            el("td", {}, when(s.created_at)));
}

// -- one session ----------------------------------------------------------------------

const TABS = [["request", "Next request"], ["timeline", "Timeline"], ["pages", "Pages"],
              ["state", "Working state"], ["search", "Search"], ["replay", "Replay"]];

async function showSession(sid) {
  show(el("p", { class: "muted" }, "Loading…"));
  let info;
  try {
    info = await api(sessionPath(sid));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      show(el("h1", { id: "not-found" }, "Session not found"),
           el("p", {}, "No session ", el("code", {}, sid), " for this key."),
           el("a", { href: "#/" }, "All sessions"));
      return;
    }
    const shown = failure(err);
    if (shown) show(shown);
    return;
  }
  const panels = {};
  const tabs = el("div", { class: "tabs", role: "tablist" });
  const loaded = new Set();
  const open = (name) => {
    for (const [key] of TABS) {
      panels[key].hidden = key !== name;
      tabs.querySelector(`[data-tab="${key}"]`).setAttribute("aria-selected", String(key === name));
    }
    if (!loaded.has(name)) { loaded.add(name); LOADERS[name](sid, panels[name], info); }
  };
  for (const [key, label] of TABS) {
    panels[key] = el("section", { id: "tab-" + key, hidden: true });
    tabs.append(el("button", { type: "button", role: "tab", "data-tab": key,
                               onclick: () => open(key) }, label));
  }
  show(sessionHeader(sid, info), tabs, ...TABS.map(([key]) => panels[key]));
  open("request");
}

function sessionHeader(sid, info) {
  const st = info.stats || {};
  const actions = el("div", { class: "controls" },
    el("button", { type: "button", class: "danger", id: "delete-session",
                   onclick: () => destroy(sessionPath(sid), `Delete session "${sid}" and everything of it?`) },
       "Delete session"),
    info.user ? el("button", { type: "button", class: "danger", id: "erase-user",
                               onclick: () => destroy("/v1/users/" + encodeURIComponent(info.user),
                                 `Erase user "${info.user}": every session and memory of theirs?`) },
                   "Erase user") : null);
  return el("div", {},
    el("h1", {}, el("span", { id: "session-name" }, sid)),
    el("p", { class: "muted", id: "session-facts" },
       `user ${info.user || "—"} · ${num(info.messages)} messages · ${num(info.pages)} pages · ` +
       `archived ${num(st.archived)}, recalled ${num(st.recalled)}, evicted ${num(st.evicted)} · ` +
       `created ${when(info.created_at)}`),
    actions);
}

async function destroy(path, question) {
  if (!window.confirm(question + " This cannot be undone.")) return;
  try {
    await api(path, "DELETE");
    location.hash = "#/";
  } catch (err) {
    const shown = failure(err);
    if (shown) view().prepend(shown);
  }
}

const LOADERS = { request: loadRequest, timeline: loadTimeline, pages: loadPages,
                  state: loadState, search: loadSearch, replay: loadReplay };

// -- the next request (peek) ----------------------------------------------------------------

function loadRequest(sid, panel) {
  const budget = el("input", { id: "budget", type: "number", min: 1, placeholder: "session's",
                               "aria-label": "budget in tokens" });
  const recipe = el("select", { id: "recipe", "aria-label": "recipe" },
                    ["auto", "chat", "tool_loop"].map((r) => el("option", { value: r }, r)));
  const out = el("div", { id: "peek" });
  const run = async () => {
    out.replaceChildren(el("p", { class: "muted" }, "Building (nothing is stored)…"));
    try {
      const data = await api(sessionPath(sid) + "/peek?" + q({ budget: budget.value, recipe: recipe.value }));
      out.replaceChildren(...renderPeek(sid, data, lastPeek.get(sid)));
      lastPeek.set(sid, data);
    } catch (err) {
      const shown = failure(err);
      if (shown) out.replaceChildren(shown);
    }
  };
  panel.append(
    el("form", { onsubmit: (e) => { e.preventDefault(); run(); } },
       el("label", { for: "budget" }, "Budget"), budget, el("label", { for: "recipe" }, "Recipe"),
       recipe, el("button", { type: "submit", id: "peek-button" }, "Build now (peek)")),
    el("p", { class: "muted" }, "The request memci would send now, built in a transaction " +
       "that is rolled back: nothing of the session changes."), out);
  run();
}

function segmentTokens(data) {
  const byName = Object.fromEntries(data.segments.map((s) => [s.name, s.tokens]));
  const sections = data.stats.sections || {};
  byName.tools = (sections.tools || 0) + (sections.agent_tools || 0);
  return SEGMENTS.map((name) => [name, byName[name] || 0]);
}

function renderPeek(sid, data, before) {
  const st = data.stats;
  const parts = segmentTokens(data);
  const scale = Math.max(st.budget, st.total_tokens, 1);
  const bar = el("div", { class: "bar", id: "segment-bar", role: "img",
                          "aria-label": "tokens per segment" },
    parts.filter(([, t]) => t > 0).map(([name, t]) => el("span", {
      class: "seg-" + name, "data-segment": name, "data-tokens": t,
      title: `${name}: ${num(t)} tokens` })));
  // Widths are set as properties (the CSP allows no inline style attributes).
  for (const span of bar.children) span.style.width = (100 * span.dataset.tokens / scale) + "%";
  const legend = el("ul", { class: "legend", id: "segment-legend" },
    parts.map(([name, t]) => el("li", { "data-segment": name, "data-tokens": t },
      el("i", { class: "seg-" + name }), `${name}: ${num(t)}`)));
  const reuse = st.total_tokens ? Math.round(100 * st.prefix_tokens / st.total_tokens) : 0;
  return [
    el("p", { id: "peek-summary" }, `${num(st.total_tokens)} of ${num(st.budget)} tokens · ` +
       `${num(st.messages)} messages · strategy ${st.strategy} · recipe ${st.recipe} · ` +
       `the whole history would be ${num(st.full_tokens)} tokens (saves ${num(st.saved_tokens)})`),
    bar, legend,
    el("h2", {}, "Between two requests"),
    el("p", { id: "prefix", "data-prefix": st.prefix_tokens, "data-total": st.total_tokens },
       `A provider's prompt cache reuses ${num(st.prefix_tokens)} of ${num(st.total_tokens)} ` +
       `tokens (${reuse}%): the start of this request that repeats the last request built.`),
    renderChanges(data, before),
    el("h2", {}, "Contents page (as the model reads it)"),
    el("pre", { id: "contents-page", class: "card" },
       data.segments.filter((s) => s.name === "contents").flatMap((s) => s.messages)
         .map((m) => m.content).join("\n\n") || "(no page has left the window)"),
    el("h2", {}, `Retrieved memory (${data.memory.length})`),
    renderMemory(data.memory),
    el("h2", {}, "The request, by segment"),
    ...data.segments.map((s) => el("details", { class: "card", "data-segment": s.name },
      el("summary", {}, `${s.name} · ${num(s.tokens)} tokens · ${s.messages.length} messages`),
      ...s.messages.map((m) => messageBlock(sid, m)))),
    el("p", { class: "muted" }, "Tools sent: " + (data.tools.map((t) => t.name).join(", ") || "none")),
  ];
}

function repeatKey(m) {
  // As the builder compares requests: stored messages by seq and tokens, others by text.
  return JSON.stringify([m.seq ?? null, m.tokens ?? null, m.seq == null ? m.content : null]);
}

function renderChanges(data, before) {
  if (!before) {
    return el("p", { class: "muted", id: "changes" },
              "Build again (after the session changes, or at another budget) to see what changed.");
  }
  const rows = segmentTokens(data).map(([name, t]) => {
    const old = Object.fromEntries(segmentTokens(before))[name] || 0;
    return el("tr", {}, el("td", {}, name), el("td", { class: "num" }, num(old)),
              el("td", { class: "num" }, num(t)), el("td", { class: "num" }, (t - old >= 0 ? "+" : "") + num(t - old)));
  });
  const now = data.segments.flatMap((s) => s.messages).map(repeatKey);
  const was = before.segments.flatMap((s) => s.messages).map(repeatKey);
  let same = 0;
  while (same < now.length && same < was.length && now[same] === was[same]) same++;
  const was_set = new Set(was);
  const now_set = new Set(now);
  return el("div", { id: "changes", class: "card" },
    el("p", {}, `Against the previous build in this tab: the first ${same} messages are the same; ` +
       `${now.filter((k) => !was_set.has(k)).length} messages are new, ` +
       `${was.filter((k) => !now_set.has(k)).length} left.`),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "segment"), el("th", { class: "num" }, "before"),
       el("th", { class: "num" }, "now"), el("th", { class: "num" }, "change"))), el("tbody", {}, rows)));
}

function renderMemory(items) {
  if (!items.length) return el("p", { class: "muted", id: "memory" }, "Nothing retrieved for this page.");
  return el("ol", { id: "memory" }, items.map((r) => el("li", { class: "card" },
    el("pre", {}, r.text),
    el("div", { class: "meta muted" },
       `${r.kind} from ${r.source} · score ${Number(r.score).toFixed(3)}` +
       (r.session ? ` · session ${r.session}` : "") + (r.seq ? ` · message ${r.seq}` : "") +
       (r.page ? ` · page ${r.page}` : "") + (r.created_at ? ` · ${when(r.created_at)}` : "")))));
}

// -- messages -------------------------------------------------------------------------------

function messageBlock(sid, m, calls) {
  const block = el("div", { class: "msg role-" + m.role, id: m.seq != null ? "msg-" + m.seq : null,
                            "data-seq": m.seq ?? "" },
    el("div", { class: "meta" }, [m.role, m.name ? `(${m.name})` : null,
      m.seq != null ? `#${m.seq}` : null, m.created_at ? when(m.created_at) : null,
      m.tokens != null ? `${num(m.tokens)} tokens` : null].filter(Boolean).join(" · ")));
  for (const part of m.parts || []) {
    if (part.kind === "tool_call") {
      const call = el("div", { class: "call", "data-call": part.id },
                      el("code", {}, `${part.name}(${part.arguments || ""})`), ` · call ${part.id}`);
      if (calls) calls.set(part.id, call);
      block.append(call);
    } else if (part.kind === "tool_result") {
      const call = calls && calls.get(part.call_id);
      block.append(el("div", { class: "meta" }, `result of call ${part.call_id}` +
                      (part.is_error ? " (error)" : "")));
      if (call && m.seq != null) {
        call.append(el("div", {}, el("button", { type: "button", class: "jump",
          onclick: () => document.getElementById("msg-" + m.seq).scrollIntoView() },
          `→ its result, #${m.seq}`)));
      }
    }
  }
  block.append(textBlock(sid, m.content || ""));
  return block;
}

function textBlock(sid, text) {
  const pre = el("pre", {}, text.length > TEXT_SHOWN ? text.slice(0, TEXT_SHOWN) : text);
  const box = el("div", {}, pre);
  if (text.length > TEXT_SHOWN) {
    box.append(el("button", { type: "button", onclick: (e) => { pre.textContent = text; e.target.remove(); } },
                  `show all ${num(text.length)} characters`));
  }
  const ids = new Set([...text.matchAll(ARTIFACT)].map((found) => found[1]));
  for (const id of ids) box.append(artifactButton(sid, id));
  return box;
}

function artifactButton(sid, id) {
  const holder = el("div", {});
  const button = el("button", { type: "button", class: "open-artifact", "data-artifact": id },
                    `open artifact:${id}`);
  button.addEventListener("click", async () => {
    try {
      const data = await api(sessionPath(sid) + "/artifacts/" + encodeURIComponent(id) + "?length=200000");
      holder.replaceChildren(el("pre", { class: "artifact", "data-artifact": id }, data.text),
        data.next_offset !== null ? el("p", { class: "muted" }, `first ${num(data.text.length)} characters`) : null);
    } catch (err) {
      const shown = failure(err);
      if (shown) holder.replaceChildren(shown);
    }
  });
  holder.append(button);
  return holder;
}

// -- the timeline (stored log), a page at a time --------------------------------------------

function loadTimeline(sid, panel) {
  const list = el("div", { id: "timeline" });
  const more = el("button", { type: "button", id: "timeline-more", hidden: true }, "More");
  const calls = new Map();
  let after = 0;
  const load = async () => {
    try {
      const data = await api(sessionPath(sid) + "/messages?" + q({ after, limit: 200 }));
      for (const m of data.messages) list.append(messageBlock(sid, m, calls));
      after = data.next_after;
      more.hidden = after === null;
    } catch (err) {
      const shown = failure(err);
      if (shown) list.append(shown);
    }
  };
  more.addEventListener("click", load);
  panel.append(list, more);
  load();
}

// -- pages ----------------------------------------------------------------------------------

function loadPages(sid, panel) {
  const rows = el("tbody", { id: "pages" });
  const more = el("button", { type: "button", id: "pages-more", hidden: true }, "More");
  const total = el("p", { class: "muted" });
  let after = 0;
  const load = async () => {
    try {
      const data = await api(sessionPath(sid) + "/pages?" + q({ after, limit: 200 }));
      total.textContent = `${num(data.total)} pages`;
      for (const p of data.pages) {
        const place = p.place + (p.detail ? ` (${p.detail})` : "");
        rows.append(el("tr", { "data-page": p.page, "data-place": p.place },
          el("td", { class: "num" }, p.page), el("td", {}, `${p.first_seq}–${p.last_seq}`),
          el("td", { class: "num" }, num(p.messages)), el("td", { class: "num" }, num(p.tokens)),
          el("td", { class: "place-" + p.place }, place),
          el("td", { class: "num" }, num(p.recall_count)),
          el("td", {}, p.archived_round != null ? `round ${p.archived_round}` : "—")));
      }
      after = data.next_after;
      more.hidden = after === null;
    } catch (err) {
      const shown = failure(err);
      if (shown) panel.append(shown);
    }
  };
  more.addEventListener("click", load);
  panel.append(total, el("table", {}, el("thead", {}, el("tr", {},
    el("th", { class: "num" }, "page"), el("th", {}, "messages (seq)"), el("th", { class: "num" }, "count"),
    el("th", { class: "num" }, "tokens"), el("th", {}, "place"), el("th", { class: "num" }, "recalls"),
    el("th", {}, "archived"))), rows), more);
  load();
}

// -- working state --------------------------------------------------------------------------

function entryText(entry) {
  if (entry === null || typeof entry !== "object") return String(entry);
  const main = entry.title || entry.text || entry.summary || entry.content;
  return main ? String(main) : JSON.stringify(entry);
}

async function loadState(sid, panel) {
  try {
    const data = await api(sessionPath(sid) + "/workstate");
    const section = (name, items) => el("div", { class: "card", "data-state": name },
      el("h2", {}, `${name} (${items.length})`),
      items.length ? el("ul", {}, items.map((i) => el("li", {}, entryText(i))))
                   : el("p", { class: "muted" }, "empty"));
    panel.append(el("p", { class: "muted" }, `round ${data.round}`),
                 section("pins", data.pins || []), section("plan", data.plan || []),
                 section("notebook", data.notebook || []),
                 ...Object.entries(data.fastmemo || {}).map(([name, items]) =>
                   section("fastmemo · " + name, items || [])));
  } catch (err) {
    const shown = failure(err);
    if (shown) panel.append(shown);
  }
}

// -- search ---------------------------------------------------------------------------------

function loadSearch(sid, panel) {
  const input = el("input", { id: "search-q", type: "search", placeholder: "what to look for",
                              "aria-label": "search" });
  const scope = el("select", { id: "search-scope", "aria-label": "scope" },
                   ["session", "user", "tenant"].map((s) => el("option", { value: s }, s)));
  const out = el("ol", { id: "hits" });
  const run = async () => {
    out.replaceChildren();
    if (!input.value.trim()) return;
    try {
      const data = await api(sessionPath(sid) + "/search?" + q({ q: input.value.trim(), scope: scope.value, k: 20 }));
      if (!data.hits.length) out.append(el("li", { class: "muted" }, "No hits."));
      for (const hit of data.hits) {
        out.append(el("li", { class: "hit card" },
          el("div", { class: "meta muted" }, `score ${Number(hit.score).toFixed(3)} · session ${hit.session ?? sid}` +
             (hit.page ? ` · page ${hit.page}` : "") + ` · ${(hit.retrievers || []).join("+")}`),
          hit.message ? messageBlock(hit.session || sid, hit.message) : el("p", {}, hit.kind)));
      }
    } catch (err) {
      const shown = failure(err);
      if (shown) out.append(shown);
    }
  };
  panel.append(el("form", { onsubmit: (e) => { e.preventDefault(); run(); } }, input, scope,
                  el("button", { type: "submit", id: "search-button" }, "Search")), out);
}

// -- replay: memci replay's figures, drawn as SVG ------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child);
  return node;
}

function chart(id, label, values, options) {
  // values: one array per series, one number per request; drawn to one scale.
  const width = 1000, height = 220, left = 70, right = 10, top = 10, bottom = 190;
  const n = Math.max(1, values[0].data.length);
  const peak = Math.max(1, ...values.flatMap((s) => s.data));
  const x = (i) => left + (i + 0.5) * (width - left - right) / n;
  const y = (v) => bottom - v * (bottom - top) / peak;
  const body = [svg("line", { x1: left, x2: width - right, y1: bottom, y2: bottom, stroke: "#94a3b8" })];
  for (const tick of [0, 0.5, 1]) {
    body.push(svg("text", { x: left - 6, y: y(tick * peak) + 4, "text-anchor": "end",
                            "font-size": 11, fill: "#6b7280" }, options.format(tick * peak)));
  }
  body.push(svg("text", { x: (left + width) / 2, y: height - 8, "text-anchor": "middle",
                          "font-size": 11, fill: "#6b7280" }, `request (1–${n})`));
  for (const series of values) {
    if (options.bars) {
      const w = Math.max(1, (width - left - right) / n - 1);
      series.data.forEach((v, i) => body.push(svg("rect", { x: x(i) - w / 2, y: y(v), width: w,
        height: bottom - y(v), fill: series.color })));
    } else {
      body.push(svg("polyline", { fill: "none", stroke: series.color, "stroke-width": 2,
        points: series.data.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        "data-series": series.name }));
    }
  }
  return el("figure", { class: "card", id }, svg("svg", { viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-label": label, width: "100%" }, ...body),
    el("figcaption", { class: "legend" }, values.map((s) => el("span", {},
      el("i", { class: "swatch-" + s.name }), s.label))));
}

function loadReplay(sid, panel) {
  const budget = el("input", { id: "replay-budget", type: "number", min: 1, placeholder: "session's",
                               "aria-label": "budget in tokens" });
  const out = el("div", { id: "replay" });
  const run = async () => {
    out.replaceChildren(el("p", { class: "muted" }, "Replaying in a scratch store…"));
    try {
      const data = await api(sessionPath(sid) + "/replay?" + q({ budget: budget.value }));
      const reqs = data.requests;
      const t = data.totals;
      out.replaceChildren(
        el("p", { id: "replay-summary" }, `${num(t.requests)} requests · memci sent ${num(t.memci_tokens)} ` +
           `tokens, the full history ${num(t.full_tokens)} (${Math.round(100 * (t.saved_share || 0))}% saved) · ` +
           `reusable prefix ${Math.round(100 * t.mean_prefix_share)}% of a request on average`),
        chart("replay-tokens", "tokens per request", [
          { name: "full", label: "full history", color: "#94a3b8", data: reqs.map((r) => r.full_tokens) },
          { name: "memci", label: "memci", color: "#3b82f6", data: reqs.map((r) => r.memci_tokens) }],
          { format: (v) => num(Math.round(v)) }),
        chart("replay-prefix", "reusable prefix share per request", [
          { name: "prefix", label: "share of the request a prompt cache reuses", color: "#8b5cf6",
            data: reqs.map((r) => (r.memci_tokens ? r.prefix_tokens / r.memci_tokens : 0)) }],
          { bars: true, format: (v) => Math.round(100 * v) + "%" }));
    } catch (err) {
      const shown = failure(err);
      if (shown) out.replaceChildren(shown);
    }
  };
  panel.append(el("form", { onsubmit: (e) => { e.preventDefault(); run(); } },
                  el("label", { for: "replay-budget" }, "Budget"), budget,
                  el("button", { type: "submit", id: "replay-button" }, "Replay")),
               el("p", { class: "muted" }, "memci replay over this session's messages: each " +
                 "request memci would have sent against the whole history, built again in a " +
                 "scratch store (this session is not touched)."), out);
}

// -- start ----------------------------------------------------------------------------------

async function start() {
  document.getElementById("signin-form").addEventListener("submit", signIn);
  document.getElementById("signout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  const had = Boolean(sessionStorage.getItem(KEY));
  try {
    await api("/v1/ui/sessions?limit=1");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      sessionStorage.removeItem(KEY);
      showSignIn(had ? err.message : "");
      return;
    }
  }
  signedIn();
}

start();
