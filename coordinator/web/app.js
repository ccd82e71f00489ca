// The tilesolve dashboard: live batches and workers (server-sent events), and a puzzle view that
// submits a board, waits for its optimal solution and animates it move by move. Plain JS, no
// build step; served from the coordinator binary.
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

// A shared link: #board=... shows that board's stored solution.
async function openLink() {
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

function render(o) {
  if (o.error) return;
  $("totals").textContent = `${o.workers.length} workers · ${rate(o.nodes_per_second)} nodes/s · ` +
    `${o.puzzles_solved} solved · ${o.puzzles_pending} pending · ${o.tasks_running} tasks running, ${o.tasks_queued} queued`;
  const batches = $("batches");
  batches.innerHTML = "";
  for (const b of o.batches) {
    const row = document.createElement("tr");
    cell(row, b.batch);
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
    cell(row, w.id);
    cell(row, w.host || "–");
    cell(row, w.threads);
    cell(row, (w.default_heuristics || []).join(", ") || "–");
    cell(row, rate(w.nodes_per_second));
    cell(row, w.tasks_done);
    cell(row, secs(w.seconds_since_seen) + " ago");
    workers.appendChild(row);
  }
}

function connect() {
  const source = new EventSource("/api/events" + (token ? "?token=" + encodeURIComponent(token) : ""));
  source.addEventListener("overview", (event) => render(JSON.parse(event.data)));
  source.onerror = () => {
    $("totals").textContent = "reconnecting…";
    api("/api/overview").catch(() => {});
  };
}

// ---- wiring -------------------------------------------------------------------------------

$("shuffle").onclick = () => { const side = Number($("size").value); setBoard(uniformBoard(side), side); };
$("walk").onclick = () => { const side = Number($("size").value); setBoard(walkBoard(side, Number($("walk-moves").value)), side); };
$("solve").onclick = solve;
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
