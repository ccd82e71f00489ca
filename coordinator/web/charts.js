// Line charts with axes, as inline SVG: a time axis along the bottom (clock times, or dates and
// times over more than a day), a value axis on the left with "nice" ticks and its unit, grid
// lines, and a legend. A null point breaks the line (the coordinator was not running).
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const CHART = { width: 560, height: 200, left: 64, right: 12, top: 22, bottom: 28 };

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

// 1, 2 or 5 times a power of ten, at least `step`.
function niceStep(step) {
  const power = Math.pow(10, Math.floor(Math.log10(step)));
  for (const factor of [1, 2, 5, 10]) if (factor * power >= step) return factor * power;
  return 10 * power;
}

// A value as the axis shows it: 1.2 k, 3.4 M, 5 G; small values with their decimals.
function shortNumber(value) {
  const size = Math.abs(value);
  if (size >= 1e9) return (value / 1e9).toFixed(value % 1e9 ? 1 : 0) + " G";
  if (size >= 1e6) return (value / 1e6).toFixed(value % 1e6 ? 1 : 0) + " M";
  if (size >= 1e3) return (value / 1e3).toFixed(value % 1e3 ? 1 : 0) + " k";
  return Number.isInteger(value) ? String(value) : value.toFixed(size < 1 ? 2 : 1);
}

function timeLabel(unixMs, spanMs) {
  const at = new Date(unixMs);
  const clock = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (spanMs <= 26 * 3600 * 1000) return clock;
  return at.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + clock;
}

// Draws `series` ([{name, color, values: [[unixMs, value] | null]}]) over [from, to] into
// `svg`, the value axis labelled with `unit` (written along it).
function lineChart(svg, { from, to, unit, series }) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const plotWidth = CHART.width - CHART.left - CHART.right;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const values = series.flatMap((s) => s.values.filter((p) => p).map((p) => p[1]));
  const top = Math.max(...values, 0);
  const step = niceStep(top > 0 ? top / 4 : 1);
  const ceiling = Math.max(step, Math.ceil(top / step) * step);
  const x = (t) => CHART.left + ((t - from) / Math.max(to - from, 1)) * plotWidth;
  const y = (v) => CHART.top + plotHeight - (v / ceiling) * plotHeight;

  const last = series.map((s) => {
    const point = [...s.values].reverse().find((p) => p);
    return `${s.name} ${point ? shortNumber(point[1]) : "–"}`;
  });
  svg.setAttribute("aria-label", `${unit}: ${last.join(", ")}`);
  svg.appendChild(svgElement("title", {}, `${unit}: ${last.join(", ")}`));

  // Value axis: grid lines and labels at each step, the unit above.
  for (let value = 0; value <= ceiling + step / 2; value += step) {
    svg.appendChild(svgElement("line", { class: "grid", x1: CHART.left, x2: CHART.width - CHART.right, y1: y(value), y2: y(value) }));
    svg.appendChild(svgElement("text", { class: "tick", x: CHART.left - 6, y: y(value) + 4, "text-anchor": "end" }, shortNumber(value)));
  }
  svg.appendChild(svgElement("text", { class: "unit", "text-anchor": "middle",
    transform: `translate(12 ${CHART.top + plotHeight / 2}) rotate(-90)` }, unit));
  // Time axis: five labelled ticks from `from` to `to`.
  const span = to - from;
  for (let i = 0; i <= 4; i++) {
    const t = from + (span * i) / 4;
    svg.appendChild(svgElement("line", { class: "axis", x1: x(t), x2: x(t), y1: CHART.top + plotHeight, y2: CHART.top + plotHeight + 4 }));
    const anchor = i === 0 ? "start" : i === 4 ? "end" : "middle";
    svg.appendChild(svgElement("text", { class: "tick", x: x(t), y: CHART.height - 8, "text-anchor": anchor }, timeLabel(t, span)));
  }
  svg.appendChild(svgElement("line", { class: "axis", x1: CHART.left, x2: CHART.width - CHART.right, y1: CHART.top + plotHeight, y2: CHART.top + plotHeight }));
  svg.appendChild(svgElement("line", { class: "axis", x1: CHART.left, x2: CHART.left, y1: CHART.top, y2: CHART.top + plotHeight }));

  // The lines, each broken at a null point, and the legend along the top.
  let legendX = CHART.left + 4;
  series.forEach((s) => {
    let run = [];
    const flush = () => {
      if (run.length > 1) svg.appendChild(svgElement("polyline", { class: "series", stroke: s.color, points: run.join(" ") }));
      else if (run.length === 1) {
        const [px, py] = run[0].split(",");
        svg.appendChild(svgElement("circle", { cx: px, cy: py, r: 2, fill: s.color }));
      }
      run = [];
    };
    for (const point of s.values) {
      if (!point) { flush(); continue; }
      run.push(`${x(point[0]).toFixed(1)},${y(point[1]).toFixed(1)}`);
    }
    flush();
    svg.appendChild(svgElement("rect", { x: legendX, y: 6, width: 10, height: 3, fill: s.color }));
    const label = svgElement("text", { class: "legend", x: legendX + 14, y: 11 }, s.name);
    svg.appendChild(label);
    legendX += 22 + 6.5 * s.name.length;
  });
}
