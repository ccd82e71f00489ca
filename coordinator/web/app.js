// The tilesolve dashboard. It opens on the work: every stored batch (paged, searched, filtered
// by state), the workers, and charts of the coordinator's recorded history with axes and a time
// range. A batch page (#batch=N: every item, paged, with cancel and downloads), a batch
// submitter that shows bad lines before sending (#submit), and a puzzle view that solves or
// looks up a board and animates its optimal solution move by move (#puzzle) are tabs. Plain JS,
// no build step (charts.js draws the charts); served from the coordinator binary. Text from
// batches only ever goes in through textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let token = localStorage.getItem("tilesolve-token") || "";

// A link that carries the token (`/?token=...`, as the deployment notes give it) is honoured
// once: the token is kept like one typed in, and taken out of the address bar so it does not
// linger in history, bookmarks or a shared screen.
{
  const address = new URL(window.location.href);
  const given = address.searchParams.get("token");
  if (given !== null) {
    token = given;
    localStorage.setItem("tilesolve-token", token);
    address.searchParams.delete("token");
    history.replaceState(null, "", address.pathname + address.search + address.hash);
  }
}

async function api(path, options = {}) {
  const headers = Object.assign({ "Content-Type": "application/json" }, options.headers || {});
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch(path, Object.assign({}, options, { headers }));
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (response.status === 401) $("token-box").hidden = false;
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// ---- boards -------------------------------------------------------------------------------

// A board's text as the solver writes it: a square's tiles joined by commas (its shape is its
// count), a rectangle's rows in braces: `{{1,2,3},{4,5,0}}`. Null when the text is neither.
function parseBoard(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) {
    const rows = (trimmed.match(/\{[^{}]*\}/g) || []).map((row) =>
      row.split(/[^0-9]+/).filter((s) => s !== "").map(Number));
    const cols = rows.length ? rows[0].length : 0;
    const even = rows.every((row) => row.length === cols);
    const shape = { rows: rows.length, cols };
    return even && rows.length >= 2 && cols >= 2 && rows.length * cols <= 32
      ? { shape, tiles: rows.flat() } : null;
  }
  const tiles = trimmed.split(/[^0-9]+/).filter((s) => s !== "").map(Number);
  const side = Math.round(Math.sqrt(tiles.length));
  return side * side === tiles.length && side >= 3 ? { shape: { rows: side, cols: side }, tiles } : null;
}

function boardText(tiles, shape) {
  if (shape.rows === shape.cols) return tiles.join(",");
  const rows = [];
  for (let r = 0; r < shape.rows; r++) rows.push("{" + tiles.slice(r * shape.cols, (r + 1) * shape.cols).join(",") + "}");
  return "{" + rows.join(",") + "}";
}

// `RxC` as the size list holds it.
function shapeOf(text) {
  const [rows, cols] = text.split("x").map(Number);
  return { rows, cols };
}

function shapeName(shape) {
  return `${shape.rows}x${shape.cols}`;
}

function goalTiles(shape) {
  const tiles = [];
  for (let i = 1; i < shape.rows * shape.cols; i++) tiles.push(i);
  tiles.push(0);
  return tiles;
}

// Solvable exactly when the permutation's parity equals the parity of the blank's taxicab
// distance from its goal cell (the same rule as the solver's, for every width).
function solvable(tiles, shape) {
  const goal = goalTiles(shape);
  const where = new Map(goal.map((t, i) => [t, i]));
  const perm = tiles.map((t) => where.get(t));
  const seen = new Array(perm.length).fill(false);
  let parity = 0;
  for (let i = 0; i < perm.length; i++) {
    if (seen[i]) continue;
    let length = 0;
    for (let j = i; !seen[j]; j = perm[j]) { seen[j] = true; length++; }
    parity ^= (length - 1) & 1;
  }
  const cols = shape.cols, blank = tiles.indexOf(0), target = tiles.length - 1;
  const distance = Math.abs((blank % cols) - (target % cols)) + Math.abs(Math.floor(blank / cols) - Math.floor(target / cols));
  return parity === (distance & 1);
}

function uniformBoard(shape) {
  const tiles = goalTiles(shape);
  for (let i = tiles.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [tiles[i], tiles[j]] = [tiles[j], tiles[i]];
  }
  if (!solvable(tiles, shape)) {
    const a = tiles.indexOf(1), b = tiles.indexOf(2);
    [tiles[a], tiles[b]] = [tiles[b], tiles[a]];
  }
  return tiles;
}

const STEP = { U: [-1, 0], D: [1, 0], L: [0, -1], R: [0, 1] };

// The blank moves in direction `letter`; null if it would leave the board.
function applyMove(tiles, shape, letter) {
  const { rows, cols } = shape;
  const blank = tiles.indexOf(0);
  const row = Math.floor(blank / cols) + STEP[letter][0], col = (blank % cols) + STEP[letter][1];
  if (row < 0 || row >= rows || col < 0 || col >= cols) return null;
  const next = tiles.slice();
  next[blank] = next[row * cols + col];
  next[row * cols + col] = 0;
  return next;
}

function walkBoard(shape, moves) {
  let tiles = goalTiles(shape);
  for (let i = 0; i < moves; i++) {
    tiles = applyMove(tiles, shape, "UDLR"[Math.floor(Math.random() * 4)]) || tiles;
  }
  return tiles;
}

// ---- the puzzle view ----------------------------------------------------------------------

const view = { shape: { rows: 4, cols: 4 }, start: null, moves: "", step: 0, timer: null };

// Shows the shape in the size list, adding it when it is not one of the list's own.
function showShape(shape) {
  const name = shapeName(shape), select = $("size");
  if (![...select.options].some((option) => option.value === name)) {
    select.add(new Option(`${shape.rows}×${shape.cols}`, name));
  }
  select.value = name;
}

function draw(tiles, shape) {
  const grid = $("grid");
  grid.style.gridTemplateColumns = `repeat(${shape.cols}, 52px)`;
  grid.innerHTML = "";
  for (const tile of tiles) {
    const cell = document.createElement("div");
    cell.className = tile === 0 ? "tile blank" : "tile";
    cell.textContent = tile === 0 ? "" : tile;
    grid.appendChild(cell);
  }
}

function tilesAt(step) {
  let tiles = view.start;
  for (const letter of view.moves.slice(0, step)) tiles = applyMove(tiles, view.shape, letter);
  return tiles;
}

function show(step) {
  view.step = Math.max(0, Math.min(step, view.moves.length));
  const tiles = tilesAt(view.step);
  draw(tiles, view.shape);
  $("position").textContent = `move ${view.step} of ${view.moves.length}`;
  const atGoal = tiles.join(",") === goalTiles(view.shape).join(",");
  $("board-status").textContent = atGoal ? "goal reached" : "";
  $("prev").disabled = view.step === 0;
  $("next").disabled = view.step === view.moves.length;
  $("play").disabled = view.moves.length === 0;
}

function setBoard(tiles, shape) {
  stop();
  view.shape = shape;
  view.start = tiles;
  view.moves = "";
  showShape(shape);
  $("board-input").value = boardText(tiles, shape);
  $("length").textContent = "–";
  $("moves").textContent = "";
  $("position").textContent = "";
  $("board-status").textContent = "";
  draw(tiles, shape);
  for (const id of ["prev", "next", "play"]) $(id).disabled = true;
}

function showSolution(board, length, moves) {
  const parsed = parseBoard(board);
  view.shape = parsed.shape;
  showShape(parsed.shape);
  view.start = parsed.tiles;
  view.moves = moves;
  $("length").textContent = length;
  $("moves").textContent = moves || "(already at the goal)";
  $("share").href = "#board=" + encodeURIComponent(board);
  show(0);
}

function stop() {
  clearInterval(view.timer);
  view.timer = null;
  $("play").textContent = "▶ Play";
}

function play() {
  if (view.timer) return stop();
  if (view.step === view.moves.length) show(0);
  $("play").textContent = "❚❚ Pause";
  view.timer = setInterval(() => {
    show(view.step + 1);
    if (view.step === view.moves.length) stop();
  }, 250);
}

function status(text, error = false) {
  $("solve-status").textContent = text;
  $("solve-status").className = error ? "status error" : "status";
}

async function solve() {
  stop();
  const text = $("board-input").value.trim();
  const parsed = parseBoard(text);
  if (parsed) setBoard(parsed.tiles, parsed.shape);
  status("submitting…");
  try {
    const submitted = await api("/api/solve", {
      method: "POST",
      body: JSON.stringify({ board: text, heuristic: $("heuristic").value }),
    });
    await follow(submitted.batch);
  } catch (error) {
    status(error.message, true);
  }
}

// Polls the one-board batch until it is done, showing the bound being searched.
async function follow(batch) {
  for (;;) {
    const result = await api(`/api/batches/${batch}`);
    const item = result.items[0] || {};
    if (item.error) return status(item.error, true);
    if (item.length !== undefined && item.length !== null) {
      status(`solved: batch ${batch}, ${item.nodes.toLocaleString()} nodes in ${item.seconds.toFixed(2)} s (${item.heuristic})`);
      return showSolution(item.board, item.length, item.moves);
    }
    const s = result.status;
    if (s.preparing) {
      status(`batch ${batch}: preparing tables: ${s.preparing}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    status(`batch ${batch}: searching, bound ${s.bounds.join(", ") || "…"}, ${(s.nodes_per_second / 1e6).toFixed(1)} M nodes/s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// The stored answer for the typed board, or "not stored": never starts a search.
async function lookup() {
  stop();
  const text = $("board-input").value.trim();
  const parsed = parseBoard(text);
  if (parsed) setBoard(parsed.tiles, parsed.shape);
  try {
    const found = await api("/api/solution?board=" + encodeURIComponent(text));
    status(`stored solution (${found.heuristic})`);
    showSolution(found.board || text, found.length, found.moves);
  } catch (error) {
    status("not stored: " + error.message, true);
  }
}

// The view the address names: #batch=N a batch's page, #puzzle the puzzle view (#board=...
// that board's stored solution in it), #submit the batch form, anything else the batches and
// workers. The tabs mark the open view.
function showView(name) {
  for (const view of document.querySelectorAll("main > .view")) view.hidden = view.id !== name;
  for (const tab of document.querySelectorAll("nav a")) {
    // A batch's page belongs to the work view's tab.
    if (tab.id === "tab-" + (name === "batch-page" ? "work" : name)) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (name === "work") {
    loadBatches();
    loadHistory();
  }
}

async function openLink() {
  const batch = location.hash.match(/^#batch=(\d+)$/);
  const match = location.hash.match(/^#board=(.+)$/);
  const name = batch ? "batch-page" : match || location.hash === "#puzzle" ? "puzzle"
    : location.hash === "#submit" ? "submit" : "work";
  showView(name);
  openBatch(batch ? Number(batch[1]) : null);
  if (!match) return;
  const board = decodeURIComponent(match[1]);
  $("board-input").value = board;
  try {
    const found = await api("/api/solution?board=" + encodeURIComponent(board));
    status(`stored solution (${found.heuristic})`);
    showSolution(board, found.length, found.moves);
  } catch (error) {
    status(error.message, true);
  }
}

// ---- live batches and workers -------------------------------------------------------------

const rate = (n) => (n >= 1e9 ? (n / 1e9).toFixed(1) + " G" : n >= 1e6 ? (n / 1e6).toFixed(1) + " M" : Math.round(Math.max(n, 0)).toLocaleString());
const secs = (s) => (s >= 3600 ? (s / 3600).toFixed(1) + " h" : s >= 60 ? (s / 60).toFixed(1) + " min" : s.toFixed(1) + " s");

// A batch's time left, a range from its search (the coordinator's scheduler/eta.rs): a puzzle
// being searched may end at once, so the low end is often 0.
function etaText(b) {
  if (b.done) return "";
  if (b.eta_high_seconds == null) return "no honest estimate yet";
  const high = secs(b.eta_high_seconds);
  return b.eta_low_seconds < 1 ? `up to ${high}` : `${secs(b.eta_low_seconds)} – ${high}`;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
}

// A local time as 2026-11-25 14:05, the form the search box takes a day in.
function when(unixMs) {
  const at = new Date(unixMs);
  const two = (n) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ${two(at.getHours())}:${two(at.getMinutes())}`;
}

// Who is looking (the overview says): the operator until it says otherwise.
let you = { owner: null, role: "admin" };

// A usage figure with its limit: "3 of 5", or "3" without one.
const ofLimit = (used, most) => (most == null ? used.toLocaleString() : `${used.toLocaleString()} of ${most.toLocaleString()}`);

function renderOwners(owners) {
  $("owners-section").hidden = owners.length === 0;
  $("batch-owner-label").hidden = owners.length === 0 && !you.owner;
  const body = $("owners");
  body.innerHTML = "";
  for (const owner of owners) {
    const row = document.createElement("tr");
    cell(row, owner.name);
    cell(row, owner.role);
    cell(row, ofLimit(owner.running_batches, owner.max_running_batches));
    cell(row, ofLimit(owner.pending_boards, owner.max_pending_boards));
    cell(row, ofLimit(owner.nodes_today, owner.max_nodes_per_day));
    cell(row, owner.refused);
    body.appendChild(row);
  }
  // The owner filter offers every owner the overview names, keeping the one chosen.
  const filter = $("batch-owner-filter");
  for (const owner of owners) {
    if (![...filter.options].some((option) => option.value === owner.name)) {
      filter.appendChild(new Option(owner.name, owner.name));
    }
  }
}

function render(o) {
  if (o.error) return;
  you = o.you || you;
  $("you").hidden = !you.owner;
  $("you").textContent = you.owner ? `signed in as ${you.owner} (${you.role})` : "";
  renderOwners(o.owners || []);
  const connected = o.workers.filter((w) => !w.gone);
  const threads = connected.reduce((sum, w) => sum + w.threads, 0);
  $("totals").textContent = `${connected.length} workers, ${threads} threads · ${rate(o.nodes_per_second)} nodes/s (last ${o.rate_window_seconds} s) · ` +
    `${o.puzzles_solved_all_time.toLocaleString()} solved, ${o.puzzles_failed_all_time.toLocaleString()} failed` +
    (o.puzzles_cancelled_all_time ? `, ${o.puzzles_cancelled_all_time.toLocaleString()} cancelled` : "") + ` (all time) · ` +
    `${o.puzzles_pending} pending · ${o.tasks_running} tasks running` +
    (o.tasks_prefetched ? `, ${o.tasks_prefetched} prefetched` : "") + `, ${o.tasks_queued} queued`;
  const workers = $("workers");
  workers.innerHTML = "";
  for (const w of o.workers) {
    const row = document.createElement("tr");
    if (w.gone) row.className = "gone";
    cell(row, w.name || String(w.id));
    cell(row, w.host || "–");
    cell(row, w.threads);
    cell(row, w.gone ? "–" : w.tasks_held);
    cell(row, (w.tables || []).join(", ") || (w.default_heuristics || []).join(", ") || "–");
    cell(row, w.gone ? "–" : rate(w.nodes_per_second));
    cell(row, w.tasks_done);
    cell(row, w.gone ? `gone (${w.gone}) ${secs(w.gone_seconds)} ago` : secs(w.seconds_since_seen) + " ago");
    workers.appendChild(row);
  }
}

// ---- the batch list: every stored batch, newest first, a page at a time -------------------

const list = { cursors: [null], next: null, timer: null };

// The search box: a day (YYYY-MM-DD, local time) becomes a submission time range; anything
// else is matched against batch ids, heuristics and goals by the coordinator.
function listQuery() {
  const params = new URLSearchParams({ limit: "20" });
  const text = $("batch-search").value.trim();
  const day = text.match(/^(\d{4})-(\d{2})-(\d{2})$/);
  if (day) {
    const start = new Date(Number(day[1]), Number(day[2]) - 1, Number(day[3]));
    const end = new Date(start);
    end.setDate(end.getDate() + 1);
    params.set("since_ms", String(start.getTime()));
    params.set("until_ms", String(end.getTime()));
  } else if (text) {
    params.set("q", text);
  }
  const state = $("batch-state-filter").value;
  if (state) params.set("state", state);
  const owner = $("batch-owner-filter").value;
  if (owner) params.set("owner", owner);
  const before = list.cursors[list.cursors.length - 1];
  if (before !== null) params.set("before", String(before));
  return params;
}

function stateBadge(b) {
  const span = document.createElement("span");
  span.className = "badge " + b.state;
  span.textContent = b.preparing && !b.done ? "preparing tables" : b.state;
  if (b.preparing && !b.done) span.title = b.preparing;
  return span;
}

async function loadBatches() {
  clearTimeout(list.timer);
  let answer;
  try {
    answer = await api("/api/batch-list?" + listQuery());
  } catch (error) {
    $("batches-range").textContent = error.message;
    list.timer = setTimeout(loadBatches, 5000);
    return;
  }
  const body = $("batches");
  body.innerHTML = "";
  for (const b of answer.batches) {
    const row = document.createElement("tr");
    const link = document.createElement("a");
    link.href = "#batch=" + b.batch;
    link.textContent = b.batch;
    const first = document.createElement("td");
    first.appendChild(link);
    row.appendChild(first);
    cell(row, b.submitted_unix_ms ? when(b.submitted_unix_ms) : "–");
    cell(row, b.owner || "–");
    cell(row, b.priority);
    cell(row, b.heuristic || "–");
    const state = document.createElement("td");
    state.appendChild(stateBadge(b));
    row.appendChild(state);
    cell(row, `${b.solved} / ${b.total}`);
    const failed = document.createElement("td");
    failed.textContent = b.failed;
    if (b.failed > 0) failed.className = "failed-count";
    if (b.items_cancelled > 0) {
      // Cancelled items are not failures: shown apart, in grey.
      const cancelled = document.createElement("span");
      cancelled.className = "cancelled-count";
      cancelled.textContent = ` (${b.items_cancelled} cancelled)`;
      failed.appendChild(cancelled);
    }
    row.appendChild(failed);
    cell(row, b.done ? "" : b.bounds.slice(0, 8).join(" "));
    cell(row, rate(b.nodes_per_second));
    cell(row, b.done ? secs(b.seconds) : secs((Date.now() - b.submitted_unix_ms) / 1000) + " so far");
    cell(row, etaText(b));
    body.appendChild(row);
  }
  const page = list.cursors.length;
  $("batches-range").textContent = answer.batches.length
    ? `page ${page} · ${answer.batches.length} batches` : page > 1 ? `page ${page} · no more batches` : "no batches match";
  list.next = answer.next_before;
  $("batches-newer").disabled = page === 1;
  $("batches-older").disabled = list.next == null;
  if (!$("work").hidden) list.timer = setTimeout(loadBatches, 3000);
}

function restartList() {
  list.cursors = [null];
  loadBatches();
}

// ---- history: the coordinator's own record, so it survives reloads and restarts ------------

const history_ = { timer: null };

async function loadHistory() {
  clearTimeout(history_.timer);
  let h;
  try {
    h = await api("/api/history?seconds=" + $("history-range").value);
  } catch (error) {
    $("history-note").textContent = error.message;
    history_.timer = setTimeout(loadHistory, 15000);
    return;
  }
  const pick = (field) => h.points.map((p) => (p ? [p.unix_ms, p[field]] : null));
  const span = { from: h.from_unix_ms, to: h.to_unix_ms };
  lineChart($("chart-solved"), Object.assign({ unit: "puzzles / min", series: [
    { name: "solved", color: "#2e7d32", values: pick("solved_per_minute") },
    { name: "failed", color: "#c62828", values: pick("failed_per_minute") },
  ] }, span));
  lineChart($("chart-rate"), Object.assign({ unit: "nodes / s", series: [
    { name: "expanded nodes/s", color: "#1f3b57", values: pick("nodes_per_second") },
  ] }, span));
  lineChart($("chart-queue"), Object.assign({ unit: "count", series: [
    { name: "tasks queued", color: "#ef6c00", values: pick("tasks_queued") },
    { name: "tasks running", color: "#1565c0", values: pick("tasks_running") },
    { name: "puzzles pending", color: "#6a1b9a", values: pick("puzzles_pending") },
  ] }, span));
  lineChart($("chart-workers"), Object.assign({ unit: "workers", series: [
    { name: "connected", color: "#00695c", values: pick("workers") },
  ] }, span));
  $("history-note").textContent = `each point: rates over ${secs(h.window_seconds)} · sampled every ${secs(h.interval_seconds)} by the coordinator · ` +
    `${h.puzzles_solved.toLocaleString()} solved, ${h.puzzles_failed.toLocaleString()} failed, ${rate(h.nodes)} nodes in all`;
  if (!$("work").hidden) history_.timer = setTimeout(loadHistory, Math.max(5000, h.interval_seconds * 1000));
}

// The overview once a second, asked for again only after each answer (a slow coordinator is
// never asked twice at once). Short requests rather than one endless stream, so a headless
// browser's --dump-dom with a virtual time budget sees the page settle.
let overviewTimer = null;

async function connect() {
  clearTimeout(overviewTimer);
  try {
    render(await api("/api/overview"));
  } catch (error) {
    $("totals").textContent = "reconnecting…";
  }
  overviewTimer = setTimeout(connect, 1000);
}

// ---- the batch page: #batch=N -------------------------------------------------------------

const ITEMS_PER_PAGE = 100;
// `load` counts the page's loads and actions: a load answered after a newer one began, or
// after an action said it failed, shows nothing (it would hide the newer state or the error).
const page = { batch: null, offsets: [0], timer: null, load: 0 };

function withToken(path) {
  return token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : path;
}

function openBatch(id) {
  clearTimeout(page.timer);
  if (page.batch !== id) $("batch-item-state").value = "";
  page.batch = id;
  page.offsets = [0];
  $("batch-page").hidden = id === null;
  if (id === null) return;
  $("batch-title").textContent = `Batch ${id}`;
  $("batch-csv").href = withToken(`/api/batches/${id}/download?format=csv`);
  $("batch-jsonl").href = withToken(`/api/batches/${id}/download?format=jsonl`);
  loadBatch();
}

async function loadBatch() {
  clearTimeout(page.timer);
  const id = page.batch;
  if (id === null) return;
  const load = ++page.load;
  const offset = page.offsets[page.offsets.length - 1];
  let result;
  try {
    const state = $("batch-item-state").value;
    result = await api(`/api/batches/${id}?offset=${offset}&limit=${ITEMS_PER_PAGE}` +
      (state ? `&state=${state}` : ""));
  } catch (error) {
    if (load === page.load) batchError(error);
    return;
  }
  if (id !== page.batch || load !== page.load) return;
  const s = result.status;
  const bar = $("batch-progress");
  bar.querySelector(".solved").style.width = `${(100 * s.solved) / Math.max(s.total, 1)}%`;
  bar.querySelector(".failed").style.width = `${(100 * s.failed) / Math.max(s.total, 1)}%`;
  bar.querySelector(".bounded").style.width = `${(100 * s.bounded) / Math.max(s.total, 1)}%`;
  bar.setAttribute("aria-label", `${s.solved} solved, ${s.bounded} bounded and ${s.failed} failed of ${s.total}`);
  $("batch-state").className = "status";
  $("batch-state").textContent = `${s.solved} of ${s.total} solved, ${s.failed} failed, ` +
    (s.items_cancelled ? `${s.items_cancelled} cancelled, ` : "") +
    (s.bounded ? `${s.bounded} bounded (paths not proven optimal), ` : "") +
    (s.done ? (s.state === "cancelled" ? "done (cancelled)" : "done") : `running: bounds ${s.bounds.slice(0, 8).join(" ") || "–"} (no solution is shorter), ` +
      `${result.tasks_running} tasks with workers (running or prefetched), ${result.tasks_queued} queued, ${rate(s.nodes_per_second)} nodes/s (last 30 s), time left ${etaText(s)}`) +
    (s.preparing ? ` · preparing tables: ${s.preparing}` : "") +
    ` · submitted ${when(s.submitted_unix_ms)}` + (s.owner ? ` by ${s.owner}` : "") +
    `, priority ${s.priority}, heuristic ${s.heuristic || "–"}, goal ${s.goal || "–"}`;
  // Only its owner or an admin may change a batch (the coordinator refuses anyone else).
  const mayChange = you.role === "admin" || (you.role === "submit" && you.owner === s.owner);
  $("batch-cancel").disabled = s.done || !mayChange;
  $("batch-retry").disabled = s.failed + (s.items_cancelled || 0) === 0 || !mayChange;
  const retryOf = $("batch-retry-of");
  retryOf.hidden = !s.retry_of;
  if (s.retry_of) {
    retryOf.href = "#batch=" + s.retry_of;
    retryOf.textContent = `a retry of batch ${s.retry_of}`;
  }
  const body = $("batch-items");
  while (body.firstChild) body.removeChild(body.firstChild);
  for (const item of result.items) {
    const row = document.createElement("tr");
    cell(row, item.line == null ? "" : item.line);
    const board = document.createElement("td");
    if (item.length != null) {
      const replay = document.createElement("button");
      replay.className = "link";
      replay.textContent = item.board;
      replay.title = "replay it on the board";
      replay.onclick = () => {
        showSolution(item.board, item.length, item.moves);
        status(item.status === "bounded"
          ? `batch ${id}, line ${item.line}: ${item.length} moves, NOT proven optimal (no solution is shorter than ${item.lower_bound})`
          : `batch ${id}, line ${item.line}: ${item.length} moves`);
        history.pushState(null, "", "#puzzle");
        showView("puzzle");
      };
      board.appendChild(replay);
    } else {
      board.textContent = item.board || item.text;
    }
    row.appendChild(board);
    cell(row, item.status === "bounded"
      ? `bounded, optimal ≥ ${item.lower_bound}`
      : item.length != null ? "solved" : item.error ? "error: " + item.error
      : item.status === "cancelled" ? "cancelled" : "pending");
    if (item.status === "bounded") {
      row.lastChild.className = "bounded";
      row.lastChild.title = `A limit stopped the optimal search: no solution is shorter than ${item.lower_bound} moves, and this ${item.length}-move path is not proven optimal. Submitted again without the limit, the search starts from ${item.lower_bound}.`;
    }
    cell(row, item.length != null ? item.length : "");
    cell(row, item.nodes != null ? item.nodes.toLocaleString() : "");
    cell(row, item.seconds != null ? item.seconds.toFixed(3) : "");
    cell(row, item.moves || "");
    body.appendChild(row);
  }
  const shown = result.items.length;
  $("items-range").textContent = shown ? `items ${offset + 1} to ${offset + shown} of ${s.total}` : "no items";
  $("items-prev").disabled = page.offsets.length === 1;
  $("items-next").disabled = result.next_offset == null;
  page.next = result.next_offset;
  if (!s.done) page.timer = setTimeout(loadBatch, 2000);
}

// What a failed load or action said, in place of the batch's state until the next load.
function batchError(error) {
  page.load++;
  clearTimeout(page.timer);
  $("batch-state").textContent = error.message;
  $("batch-state").className = "status error";
}

async function cancelBatch() {
  const id = page.batch;
  if (id === null || !confirm(`Cancel batch ${id}? Its unfinished puzzles end cancelled; answers found stay.`)) return;
  try {
    await api(`/api/batches/${id}/cancel`, { method: "POST", body: "{}" });
  } catch (error) {
    batchError(error);
    return;
  }
  loadBatch();
}

async function retryBatch() {
  const id = page.batch;
  if (id === null) return;
  try {
    const retried = await api(`/api/batches/${id}/retry`, { method: "POST", body: "{}" });
    location.hash = "#batch=" + retried.batch;
  } catch (error) {
    batchError(error);
  }
}

// ---- submitting a batch: bad lines shown before anything is sent --------------------------

let checkTimer = null;

function batchRequest() {
  return {
    lines: $("batch-input").value.split(/\r?\n/),
    heuristic: $("batch-heuristic").value,
    goal: $("batch-goal").value.trim(),
    time_limit_seconds: Number($("batch-time-limit").value) || 0,
    priority: Number($("batch-priority").value) || 0,
    notify_url: $("batch-notify").value.trim(),
  };
}

async function checkBatch() {
  const request = batchRequest();
  const list = $("batch-errors");
  while (list.firstChild) list.removeChild(list.firstChild);
  const boards = request.lines.filter((l) => l.trim() && !l.trim().startsWith("#")).length;
  try {
    const checked = await api("/api/check", { method: "POST", body: JSON.stringify(request) });
    for (const e of checked.errors) {
      const li = document.createElement("li");
      li.textContent = `line ${e.line}: ${e.error}`;
      list.appendChild(li);
    }
    $("batch-check").className = checked.errors.length ? "status error" : "status";
    $("batch-check").textContent = `${boards} boards, ${checked.errors.length} invalid` +
      (checked.errors.length ? " (they fail with these reasons; the rest are solved)" : "");
  } catch (error) {
    $("batch-check").className = "status error";
    $("batch-check").textContent = error.message;
  }
}

async function submitBatch() {
  try {
    const submitted = await api("/api/batches", { method: "POST", body: JSON.stringify(batchRequest()) });
    location.hash = "#batch=" + submitted.batch;
  } catch (error) {
    $("batch-check").className = "status error";
    $("batch-check").textContent = error.message;
  }
}

function scheduleCheck() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(checkBatch, 300);
}

function readFile(file) {
  if (!file) return;
  file.text().then((text) => { $("batch-input").value = text; checkBatch(); });
}

// ---- wiring -------------------------------------------------------------------------------

$("shuffle").onclick = () => { const shape = shapeOf($("size").value); setBoard(uniformBoard(shape), shape); };
$("walk").onclick = () => { const shape = shapeOf($("size").value); setBoard(walkBoard(shape, Number($("walk-moves").value)), shape); };
$("solve").onclick = solve;
$("lookup").onclick = lookup;
$("batch-cancel").onclick = cancelBatch;
$("batch-retry").onclick = retryBatch;
$("batch-item-state").onchange = () => {
  // A filter starts from the first page.
  page.offsets = [0];
  loadBatch();
};
$("items-prev").onclick = () => { if (page.offsets.length > 1) { page.offsets.pop(); loadBatch(); } };
$("items-next").onclick = () => { if (page.next != null) { page.offsets.push(page.next); loadBatch(); } };
$("batch-input").addEventListener("input", scheduleCheck);
$("batch-goal").addEventListener("input", scheduleCheck);
$("batch-file").addEventListener("change", (e) => readFile(e.target.files[0]));
$("batch-input").addEventListener("dragover", (e) => e.preventDefault());
$("batch-input").addEventListener("drop", (e) => { e.preventDefault(); readFile(e.dataTransfer.files[0]); });
$("batch-submit").onclick = submitBatch;
$("board-input").addEventListener("keydown", (e) => { if (e.key === "Enter") solve(); });
$("prev").onclick = () => { stop(); show(view.step - 1); };
$("next").onclick = () => { stop(); show(view.step + 1); };
$("play").onclick = play;
$("token-save").onclick = () => {
  token = $("token-input").value;
  localStorage.setItem("tilesolve-token", token);
  $("token-box").hidden = true;
  connect();
};
window.addEventListener("hashchange", openLink);
let searchTimer = null;
$("batch-search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(restartList, 300); });
$("batch-state-filter").addEventListener("change", restartList);
$("batch-owner-filter").addEventListener("change", restartList);
$("batches-older").onclick = () => { if (list.next != null) { list.cursors.push(list.next); loadBatches(); } };
$("batches-newer").onclick = () => { if (list.cursors.length > 1) { list.cursors.pop(); loadBatches(); } };
$("history-range").addEventListener("change", loadHistory);

// The view opens on a 4x4 board 30 random moves from the goal.
const opening = { rows: 4, cols: 4 };
setBoard(walkBoard(opening, 30), opening);
connect();
openLink();
