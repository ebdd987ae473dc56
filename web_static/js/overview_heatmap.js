// The overview's heat map: every rank (or group of consecutive ranks) a row,
// the whole run across, each cell coloured by how busy the rank was and how
// much of that was communication (/api/heatmap; colours in heat.js). A
// straggler shows as the one row that computes while the others sit in
// communication; it and the late ranks are ticked in the left margin.
// Hovering names a cell; clicking one opens the timeline there (onPick),
// on the row's straggler or late rank if it has one.
import { api } from './api.js';
import { dur, clear, niceStep } from './fmt.js';
import { heatImage, heatLegend, decodeCells, cellShares } from './heat.js';

const LEFT = 78, RIGHT = 8, TOP = 6, BOTTOM = 22;   // px around the plot
const MAX_PLOT_H = 640;   // px: rows are whole pixels, up to this tall in all
const MAX_ROW_H = 24;     // px: a few ranks still read as a map, not bars
const COL_PX = 2;         // px per column
const MAX_COLS = 2048;    // the server's limit
const MAX_SIDE = 32767;   // device px of a canvas side
const LABEL_GAP = 14;     // px between rank labels

export class HeatMap {
  constructor({ canvas, tip, legend, onPick, onError }) {
    Object.assign(this, { canvas, tip, legend, onPick, onError });
    this.ctx = canvas.getContext('2d');
    this.ans = null;
    clear(legend).append(heatLegend());
    this.bind();
  }

  // Fetches the whole run for these ranks (numbers, in order) with their
  // marks; drawn now if the overview shows, else when it is shown.
  async load(ranks, { straggler, late }) {
    Object.assign(this, { ranks, straggler, late });
    const n = ranks.length;
    if (!n || !this.canvas.parentElement.clientWidth) { this.want = n > 0; return; }
    this.want = false;
    // Whole pixels per row and an even number of ranks per row.
    const per = Math.ceil(n / MAX_PLOT_H), rows = Math.ceil(n / per);
    this.rowH = Math.max(1, Math.min(MAX_ROW_H, Math.floor(MAX_PLOT_H / rows)));
    this.cssWidth = this.canvas.parentElement.clientWidth;
    const cols = Math.max(16, Math.min(MAX_COLS, Math.round((this.cssWidth - LEFT - RIGHT) / COL_PX)));
    const ans = await api.heatmap({ cols, rows });
    this.ans = ans;
    this.cells = decodeCells(ans.cells);
    this.img = heatImage(this.cells, ans.rows.length, ans.cols);
    this.draw();
  }

  show() {
    if (this.want) this.load(this.ranks, { straggler: this.straggler, late: this.late }).catch(this.onError);
    else if (this.ans) this.draw();
  }

  plot() {
    return { x: LEFT, y: TOP, w: Math.max(50, this.cssWidth - LEFT - RIGHT), h: this.ans.rows.length * this.rowH };
  }

  draw() {
    if (!this.ans || !this.canvas.parentElement.clientWidth) return;
    const start = performance.now();
    this.cssWidth = this.canvas.parentElement.clientWidth;
    const p = this.plot(), w = this.cssWidth, h = p.y + p.h + BOTTOM;
    const dpr = Math.min(window.devicePixelRatio || 1, 2, MAX_SIDE / w, MAX_SIDE / h);
    Object.assign(this.canvas.style, { width: `${w}px`, height: `${h}px` });
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    const c = this.ctx;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.imageSmoothingEnabled = false;
    c.drawImage(this.img, p.x, p.y, p.w, p.h);
    this.drawMargin(c, p);
    this.drawAxis(c, p);
    const ds = this.canvas.dataset;
    Object.assign(ds, { rows: String(this.ans.rows.length), cols: String(this.ans.cols), rowHeight: String(this.rowH),
      drawMs: (performance.now() - start).toFixed(1) });
    if (!ds.firstPaint) ds.firstPaint = performance.now().toFixed(1);
  }

  rowOf(rank) { return this.ans.rows.findIndex(([a, b]) => rank >= a && rank <= b); }

  // Rank labels at round ranks, then the late ranks' ticks (orange) and the
  // straggler's (red, labelled), over them.
  drawMargin(c, p) {
    const rows = this.ans.rows, rh = this.rowH, mid = (i) => p.y + (i + 0.5) * rh;
    const perRow = (rows[rows.length - 1][1] - rows[0][0] + 1) / rows.length;
    const step = Math.max(1, niceStep((LABEL_GAP / rh) * perRow));
    const sRow = this.straggler != null ? this.rowOf(this.straggler) : -1;
    c.font = '11px system-ui, sans-serif';
    c.textAlign = 'right';
    c.textBaseline = 'middle';
    c.fillStyle = '#4a5266';
    let lastY = -Infinity;
    rows.forEach(([first, last], i) => {
      const m = Math.ceil(first / step) * step;
      if (m > last || mid(i) - lastY < LABEL_GAP) return;
      if (sRow >= 0 && Math.abs(mid(i) - mid(sRow)) < LABEL_GAP) return;   // the straggler's label wins
      c.fillText(String(m), p.x - 14, mid(i));
      lastY = mid(i);
    });
    const tick = (i, colour) => {
      c.fillStyle = colour;
      c.fillRect(p.x - 10, Math.min(mid(i) - 1.5, p.y + i * rh), 8, Math.max(3, rh));
    };
    for (const r of this.late.keys()) {
      const i = this.rowOf(r);
      if (i >= 0 && i !== sRow) tick(i, '#e66101');
    }
    if (sRow >= 0) {
      tick(sRow, '#c62828');
      c.font = '600 11px system-ui, sans-serif';
      c.fillText(String(this.straggler), p.x - 14, mid(sRow));
      this.canvas.dataset.stragglerY = String(Math.round(mid(sRow)));
    }
    c.textAlign = 'left';
    c.textBaseline = 'alphabetic';
  }

  drawAxis(c, p) {
    const { t0, t1 } = this.ans, step = niceStep((t1 - t0) / Math.max(2, p.w / 110));
    const y = p.y + p.h;
    c.strokeStyle = '#9aa1b0'; c.fillStyle = '#4a5266'; c.font = '11px system-ui, sans-serif';
    c.lineWidth = 1;
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = p.x + ((t - t0) / (t1 - t0)) * p.w;
      c.beginPath(); c.moveTo(x, y); c.lineTo(x, y + 5); c.stroke();
      c.fillText(dur(t), x + 3, y + 15);
    }
  }

  // The cell under canvas point (x, y), or null.
  cellAt(x, y) {
    if (!this.ans) return null;
    const p = this.plot();
    if (x < p.x || x >= p.x + p.w || y < p.y || y >= p.y + p.h) return null;
    const { cols, col_ns: cw, t0 } = this.ans;
    const col = Math.min(cols - 1, Math.floor(((x - p.x) / p.w) * cols)), row = Math.floor((y - p.y) / this.rowH);
    const [first, last] = this.ans.rows[row];
    return { first, last, rank: this.pickRank(first, last), col, t: t0 + (col + 0.5) * cw, colNs: cw,
      ...cellShares(this.cells[row * cols + col]) };
  }

  // The rank a row stands for when clicked: its straggler, else its first
  // late rank, else its first rank.
  pickRank(first, last) {
    const s = this.straggler;
    if (s != null && s >= first && s <= last) return s;
    for (let r = first; r <= last; r++) if (this.late.has(r)) return r;
    return first;
  }

  bind() {
    const cv = this.canvas, at = (e) => { const r = cv.getBoundingClientRect(); return this.cellAt(e.clientX - r.left, e.clientY - r.top); };
    cv.addEventListener('mousemove', (e) => {
      const cell = at(e);
      this.tip.hidden = !cell;
      if (!cell) return;
      const who = cell.first === cell.last ? `rank ${cell.first}` : `ranks ${cell.first}–${cell.last}`;
      this.tip.textContent = `${who}, t = ${dur(cell.t)}, busy ${Math.round(cell.busy * 100)} %, comm ${Math.round(cell.comm * 100)} %`;
      const flip = e.offsetX > this.cssWidth - this.tip.offsetWidth - 20;   // keep it inside the card
      this.tip.style.left = `${flip ? e.offsetX - this.tip.offsetWidth - 8 : e.offsetX + 14}px`;
      this.tip.style.top = `${e.offsetY + 14}px`;
    });
    cv.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    cv.addEventListener('click', (e) => {
      const cell = at(e);
      if (cell) this.onPick(cell);
    });
  }
}
