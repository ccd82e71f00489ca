// The tilesolve dashboard: live batches and workers (server-sent events) with small charts over
// time, a batch page (#batch=N: every item, paged, with cancel and downloads), a batch submitter
// that shows bad lines before sending, and a puzzle view that solves or looks up a board and
// animates its optimal solution move by move. Plain JS, no build step; served from the
// coordinator binary. Text from batches only ever goes in through textContent, never as HTML.
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

function parseBoard(text) {
  const tiles = text.split(/[^0-9]+/).filter((s) => s !== "").map(Number);
  const side = Math.round(Math.sqrt(tiles.length));
  return side * side === tiles.length && side >= 3 ? { side, tiles } : null;
}

function goalTiles(side) {
  const tiles = [];
  for (let i = 1; i < side * side; i++) tiles.push(i);
  tiles.push(0);
  return tiles;
}

// Solvable exactly when the permutation's parity equals the parity of the blank's taxicab
// distance from its goal cell (the same rule as the solver's).
function solvable(tiles, side) {
  const goal = goalTiles(side);
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
  const blank = tiles.indexOf(0), target = side * side - 1;
  const distance = Math.abs((blank % side) - (target % side)) + Math.abs(Math.floor(blank / side) - Math.floor(target / side));
  return parity === (distance & 1);
}

function uniformBoard(side) {
  const tiles = goalTiles(side);
  for (let i = tiles.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [tiles[i], tiles[j]] = [tiles[j], tiles[i]];
  }
  if (!solvable(tiles, side)) {
    const a = tiles.indexOf(1), b = tiles.indexOf(2);
    [tiles[a], tiles[b]] = [tiles[b], tiles[a]];
  }
  return tiles;
}

const STEP = { U: [-1, 0], D: [1, 0], L: [0, -1], R: [0, 1] };

// The blank moves in direction `letter`; null if it would leave the board.
function applyMove(tiles, side, letter) {
  const blank = tiles.indexOf(0);
  const row = Math.floor(blank / side) + STEP[letter][0], col = (blank % side) + STEP[letter][1];
  if (row < 0 || row >= side || col < 0 || col >= side) return null;
  const next = tiles.slice();
  next[blank] = next[row * side + col];
  next[row * side + col] = 0;
  return next;
}

function walkBoard(side, moves) {
  let tiles = goalTiles(side);
  for (let i = 0; i < moves; i++) {
    tiles = applyMove(tiles, side, "UDLR"[Math.floor(Math.random() * 4)]) || tiles;
  }
  return tiles;
}

// ---- the puzzle view ----------------------------------------------------------------------

const view = { side: 4, start: null, moves: "", step: 0, timer: null };

function draw(tiles, side) {
  const grid = $("grid");
  grid.style.gridTemplateColumns = `repeat(${side}, 52px)`;
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
  for (const letter of view.moves.slice(0, step)) tiles = applyMove(tiles, view.side, letter);
  return tiles;
}

function show(step) {
  view.step = Math.max(0, Math.min(step, view.moves.length));
  const tiles = tilesAt(view.step);
  draw(tiles, view.side);
  $("position").textContent = `move ${view.step} of ${view.moves.length}`;
  const atGoal = tiles.join(",") === goalTiles(view.side).join(",");
  $("board-status").textContent = atGoal ? "goal reached" : "";
  $("prev").disabled = view.step === 0;
  $("next").disabled = view.step === view.moves.length;
  $("play").disabled = view.moves.length === 0;
}

function setBoard(tiles, side) {
  stop();
  view.side = side;
  view.start = tiles;
  view.moves = "";
  $("size").value = String(side);
  $("board-input").value = tiles.join(",");
  $("length").textContent = "–";
  $("moves").textContent = "";
  $("position").textContent = "";
  $("board-status").textContent = "";
  draw(tiles, side);
  for (const id of ["prev", "next", "play"]) $(id).disabled = true;
}

function showSolution(board, length, moves) {
  const parsed = parseBoard(board);
  view.side = parsed.side;
  $("size").value = String(parsed.side);
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
  if (parsed) setBoard(parsed.tiles, parsed.side);
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
  if (parsed) setBoard(parsed.tiles, parsed.side);
  try {
    const found = await api("/api/solution?board=" + encodeURIComponent(text));
    status(`stored solution (${found.heuristic})`);
    showSolution(found.board || text, found.length, found.moves);
  } catch (error) {
    status("not stored: " + error.message, true);
  }
}

// A shared link: #board=... shows that board's stored solution.
async function openLink() {
  const batch = location.hash.match(/^#batch=(\d+)$/);
  openBatch(batch ? Number(batch[1]) : null);
  const match = location.hash.match(/^#board=(.+)$/);
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

const rate = (n) => (n >= 1e6 ? (n / 1e6).toFixed(1) + " M" : Math.round(n).toLocaleString());
const secs = (s) => (s >= 3600 ? (s / 3600).toFixed(1) + " h" : s >= 60 ? (s / 60).toFixed(1) + " min" : s.toFixed(1) + " s");

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
}

// ---- charts: the last HISTORY samples (one a second from the live events), as inline SVG ----

const HISTORY = 300;
const timeline = { solved: [], rate: [] };
const batchHistory = new Map();

function remember(series, value) {
  series.push(value);
  if (series.length > HISTORY) series.shift();
}

function sparkline(svg, values, describe) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const last = values.length ? values[values.length - 1] : 0;
  svg.setAttribute("aria-label", describe(last));
  const title = document.createElementNS("http://www.w3.org/2000/svg", "title");
  title.textContent = describe(last);
  svg.appendChild(title);
  if (values.length < 2) return;
  const top = Math.max(...values, 1), bottom = Math.min(...values, 0);
  const points = values.map((v, i) => {
    const x = (i / (HISTORY - 1)) * 300;
    const y = 58 - ((v - bottom) / (top - bottom || 1)) * 56;
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points.join(" "));
  svg.appendChild(line);
}

function drawBatchCharts(id) {
  const h = batchHistory.get(id) || { solved: [], rate: [] };
  sparkline($("batch-chart-solved"), h.solved, (v) => `${v} solved`);
  sparkline($("batch-chart-rate"), h.rate, (v) => `${rate(v)} nodes/s`);
}

function rememberBatch(b) {
  if (!batchHistory.has(b.batch)) batchHistory.set(b.batch, { solved: [], rate: [] });
  const h = batchHistory.get(b.batch);
  remember(h.solved, b.solved);
  remember(h.rate, b.nodes_per_second);
}

function render(o) {
  if (o.error) return;
  const connected = o.workers.filter((w) => !w.gone);
  remember(timeline.solved, o.puzzles_solved);
  remember(timeline.rate, o.nodes_per_second);
  sparkline($("chart-solved"), timeline.solved, (v) => `${v} puzzles solved`);
  sparkline($("chart-rate"), timeline.rate, (v) => `${rate(v)} nodes/s`);
  $("totals").textContent = `${connected.length} workers · ${rate(o.nodes_per_second)} nodes/s · ` +
    `${o.puzzles_solved} solved · ${o.puzzles_pending} pending · ${o.tasks_running} tasks running, ${o.tasks_queued} queued`;
  const batches = $("batches");
  batches.innerHTML = "";
  for (const b of o.batches) {
    if (b.batch !== page.batch) rememberBatch(b);
    const row = document.createElement("tr");
    const link = document.createElement("a");
    link.href = "#batch=" + b.batch;
    link.textContent = b.batch;
    const first = document.createElement("td");
    first.appendChild(link);
    row.appendChild(first);
    cell(row, `${b.solved} / ${b.total}`);
    cell(row, b.failed);
    cell(row, b.done ? "done" : b.preparing ? "preparing tables: " + b.preparing : b.bounds.slice(0, 8).join(" "));
    cell(row, rate(b.nodes_per_second));
    cell(row, secs(b.seconds));
    cell(row, b.done ? "" : b.eta_seconds == null ? "no honest estimate yet" : secs(b.eta_seconds) + " left");
    batches.appendChild(row);
  }
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
const page = { batch: null, offsets: [0], timer: null };

function withToken(path) {
  return token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : path;
}

function openBatch(id) {
  clearTimeout(page.timer);
  page.batch = id;
  page.offsets = [0];
  $("batch-page").hidden = id === null;
  if (id === null) return;
  $("batch-title").textContent = `Batch ${id}`;
  $("batch-csv").href = withToken(`/api/batches/${id}/download?format=csv`);
  $("batch-jsonl").href = withToken(`/api/batches/${id}/download?format=jsonl`);
  $("batch-page").scrollIntoView();
  loadBatch();
}

async function loadBatch() {
  clearTimeout(page.timer);
  const id = page.batch;
  if (id === null) return;
  const offset = page.offsets[page.offsets.length - 1];
  let result;
  try {
    result = await api(`/api/batches/${id}?offset=${offset}&limit=${ITEMS_PER_PAGE}`);
  } catch (error) {
    $("batch-state").textContent = error.message;
    $("batch-state").className = "status error";
    return;
  }
  if (id !== page.batch) return;
  const s = result.status;
  rememberBatch(s);
  drawBatchCharts(id);
  $("batch-state").className = "status";
  $("batch-state").textContent = `${s.solved} of ${s.total} solved, ${s.failed} failed, ` +
    (s.done ? "done" : `running: bounds ${s.bounds.slice(0, 8).join(" ") || "–"} (no solution is shorter), ` +
      `${result.tasks_running} tasks running, ${result.tasks_queued} queued, ${rate(s.nodes_per_second)} nodes/s`) +
    (s.preparing ? ` · preparing tables: ${s.preparing}` : "");
  $("batch-cancel").disabled = s.done;
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
        status(`batch ${id}, line ${item.line}: ${item.length} moves`);
        $("puzzle").scrollIntoView();
      };
      board.appendChild(replay);
    } else {
      board.textContent = item.board || item.text;
    }
    row.appendChild(board);
    cell(row, item.length != null ? "solved" : item.error ? "error: " + item.error : "pending");
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

async function cancelBatch() {
  const id = page.batch;
  if (id === null || !confirm(`Cancel batch ${id}? Its unfinished puzzles fail as cancelled; answers found stay.`)) return;
  try {
    await api(`/api/batches/${id}/cancel`, { method: "POST", body: "{}" });
  } catch (error) {
    $("batch-state").textContent = error.message;
  }
  loadBatch();
}

// ---- submitting a batch: bad lines shown before anything is sent --------------------------

let checkTimer = null;

function batchRequest() {
  return {
    lines: $("batch-input").value.split(/\r?\n/),
    heuristic: $("batch-heuristic").value,
    goal: $("batch-goal").value.trim(),
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

$("shuffle").onclick = () => { const side = Number($("size").value); setBoard(uniformBoard(side), side); };
$("walk").onclick = () => { const side = Number($("size").value); setBoard(walkBoard(side, Number($("walk-moves").value)), side); };
$("solve").onclick = solve;
$("lookup").onclick = lookup;
$("batch-cancel").onclick = cancelBatch;
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

setBoard(walkBoard(4, 30), 4);
connect();
openLink();
