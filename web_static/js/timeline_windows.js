// Capture windows on the timeline (/api/windows, fetched beside the rows'
// other answers by timeline_data.js): where live capture left a rank's GPU
// unrecorded (CUPTI detached), a grey hatched band over its GPU streams, or
// over its strip when collapsed, labelled where it is wide enough; its
// full-capture windows, a teal bar along the top of its rows. Each band and
// bar drawn goes into f.tips (canvas pixels, for the hover tooltip) and is
// counted in f.paused and f.capture (a band per GPU stream).
import { dur } from './fmt.js';
import { GUTTER, HEAD, ROW, STRIP } from './timeline_rows.js';

export const PAUSED_TEXT = 'GPU not recorded (CUPTI detached)';
export const CAPTURE_TEXT = 'capture window';
const CAPTURE = '#00897b';
const BAR = 4;         // px of an expanded rank's capture bar
const STRIP_BAR = 3;   // px of a collapsed rank's

let hatch = null;   // the band's pattern, made once from an 8 px tile

function hatchOf(c) {
  if (hatch) return hatch;
  const tile = document.createElement('canvas');
  tile.width = tile.height = 8;
  const t = tile.getContext('2d');
  t.fillStyle = 'rgba(120, 124, 134, 0.22)';
  t.fillRect(0, 0, 8, 8);
  t.strokeStyle = 'rgba(90, 96, 110, 0.55)';
  t.lineWidth = 1.5;
  t.beginPath();
  t.moveTo(-2, 10); t.lineTo(10, -2);
  t.moveTo(-2, 2); t.lineTo(2, -2);
  t.moveTo(6, 10); t.lineTo(10, 6);
  t.stroke();
  hatch = c.createPattern(tile, 'repeat');
  return hatch;
}

// A window's [x, width] within the plot (at least a pixel), or null when out of view.
function span(f, w) {
  const x0 = Math.max(GUTTER, f.x(w.start)), x1 = Math.min(GUTTER + f.pw, f.x(w.end));
  return x1 >= x0 && x1 > GUTTER && x0 < GUTTER + f.pw ? [x0, Math.max(1, x1 - x0)] : null;
}

function tipText(w) {
  return `${w.kind === 'paused' ? PAUSED_TEXT : CAPTURE_TEXT} · rank ${w.rank} · ${dur(w.start)} to ${dur(w.end)} (${dur(w.end - w.start)})`;
}

// A band (paused) or a bar (capture) over [y, y + h), and its tip.
function mark(f, [x, wd], y, h, w) {
  f.c.fillStyle = w.kind === 'paused' ? hatchOf(f.c) : CAPTURE;
  f.c.fillRect(x, y, wd, h);
  f.tips.push({ x, y: y - f.top, w: wd, h, text: tipText(w), kind: w.kind });
  if (w.kind === 'paused') f.paused++; else f.capture++;
}

// The band's words on its first row, on a light backing, where they fit.
function label(f, [x, wd], y) {
  const c = f.c;
  c.font = '10px system-ui, sans-serif';
  const tw = c.measureText(PAUSED_TEXT).width;
  if (wd < tw + 10) return;
  c.fillStyle = 'rgba(255, 255, 255, 0.85)';
  c.fillRect(x + 3, y + 2, tw + 4, 12);
  c.fillStyle = '#3c4250';
  c.fillText(PAUSED_TEXT, x + 5, y + 11);
}

// An expanded rank: bands over its GPU streams (its header band when it has
// none), the capture bar at the top of its header band.
export function paintGroupWindows(f, g, wins) {
  if (!wins || !wins.length) return;
  const gpu = g.tracks.filter((t) => t.kind === 'gpu_stream');
  const rows = gpu.length ? gpu.map((t) => [t.y, t.rows * ROW]) : [[g.y + BAR + 1, HEAD - BAR - 3]];
  for (const w of wins) {
    const s = span(f, w);
    if (!s) continue;
    if (w.kind !== 'paused') { mark(f, s, g.y + 1, BAR, w); continue; }
    for (const [y, h] of rows) mark(f, s, y, h, w);
    label(f, s, rows[0][0]);
  }
}

// A collapsed rank: the band over its strip, the bar along the strip's top.
export function paintStripWindows(f, g, wins) {
  if (!wins || !wins.length) return;
  for (const w of wins) {
    const s = span(f, w);
    if (s) mark(f, s, g.y, w.kind === 'paused' ? STRIP : STRIP_BAR, w);
  }
}

// The tip under canvas point (x, y), the last drawn on top; null if none.
export function tipAt(tips, x, y) {
  for (let i = tips.length - 1; i >= 0; i--) {
    const t = tips[i];
    if (x >= t.x && x <= t.x + Math.max(t.w, 2) && y >= t.y && y <= t.y + t.h) return t;
  }
  return null;
}
