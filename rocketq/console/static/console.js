// rocketq console: the little behaviour pages need; everything works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // a destructive form asks first (data-confirm="Delete topic X?")
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  // a form that may take a while says so and cannot be sent twice
  for (const form of document.querySelectorAll("form")) {
    form.addEventListener("submit", (event) => {
      const button = form.querySelector("button[type=submit]");
      if (button && !button.disabled && !event.defaultPrevented) {  // a declined confirm sends nothing
        setTimeout(() => { button.disabled = true; button.textContent = "Working…"; }, 0);
      }
    });
  }
});

// charts: <div class="chart" data-series='{"name": [[ms, value], ...]}'> becomes an SVG line chart
const PALETTE = ["#c0392b", "#2e86de", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#2c3e50", "#f39c12"];
const SVG = "http://www.w3.org/2000/svg";

function svgElement(name, attributes) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

function drawChart(holder) {
  const series = JSON.parse(holder.dataset.series || "{}");
  const names = Object.keys(series).filter((name) => series[name].length > 0);
  if (names.length === 0) return;
  const points = names.flatMap((name) => series[name]);
  const t0 = Math.min(...points.map((p) => p[0])), t1 = Math.max(...points.map((p) => p[0]));
  const top = Math.max(1, ...points.map((p) => p[1]));
  const width = 600, height = 160, left = 48, bottom = 18;
  const x = (t) => left + (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (width - left - 4);
  const y = (v) => 4 + (1 - v / top) * (height - bottom - 8);
  const svg = svgElement("svg", {viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img"});
  svg.appendChild(svgElement("line", {x1: left, y1: y(0), x2: width, y2: y(0), stroke: "#b8c0cc"}));
  const label = svgElement("text", {x: 2, y: 14, "font-size": 11, fill: "#5b6575"});
  label.textContent = top.toFixed(top < 10 ? 1 : 0);
  svg.appendChild(label);
  const legend = document.createElement("ul");
  legend.className = "legend";
  names.forEach((name, i) => {
    const colour = PALETTE[i % PALETTE.length];
    const path = series[name].map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    svg.appendChild(svgElement("polyline", {points: path, fill: "none", stroke: colour, "stroke-width": 2}));
    const item = document.createElement("li");
    item.style.color = colour;
    item.textContent = `${name}: ${Number(series[name][series[name].length - 1][1].toFixed(1))}`;
    legend.appendChild(item);
  });
  holder.replaceChildren(svg, legend);
}

document.addEventListener("DOMContentLoaded", () => {
  for (const holder of document.querySelectorAll("div.chart[data-series]")) drawChart(holder);
});
