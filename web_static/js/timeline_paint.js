// Drawing one timeline frame. A frame `f` is the canvas context already
// translated to content pixels (rows.js), the time -> x mapping and the
// band of content [f.top, f.top + f.height) on screen; only the groups in
// that band are drawn, so a frame costs the same at 8 ranks or 1,024.
// Every function here records what a click can hit in f.hits, in canvas
// pixels (content y minus f.top), and counts what it drew in f.
import { dur, colorOf, niceStep } from './fmt.js';
import { GUTTER, AXIS, ROW, HEAD, GAP, NV_ROW, STRIP, MEM_ROW } from './timeline_rows.js';

const RED = '#c62828', ORANGE = '#e65100';
// Dense columns: one style string per 1/32 of busy fraction, made once
// rather than one per column per frame.
const DENSE = Array.from({ length: 33 }, (_, i) => `rgba(47, 111, 222, ${(0.12 + 0.6 * (i / 32)).toFixed(3)})`);

export function paintGroup(f, g, e) {
  const c = f.c;
  c.fillStyle = g.straggler ? '#fdecea' : g.late ? '#fff3e0' : '#eef0f4';
  c.fillRect(0, g.y, f.width, HEAD - 2);
  c.fillStyle = g.straggler ? RED : g.late ? ORANGE : '#1d2330';
  c.font = '600 12px system-ui, sans-serif';
  c.fillText(`▾ ${rankTitle(g)}`, 6, g.y + 13);
  if (g.straggler || g.late) { c.fillStyle = g.straggler ? RED : ORANGE; c.fillRect(0, g.y, 4, g.h - GAP); }
  if (g.nvRows) paintNvtx(f, g, e);
  g.memGpus.forEach((d, i) => paintMemory(f, e, d, g.memY + i * (MEM_ROW + GAP)));
  for (const t of g.tracks) paintTrack(f, t, e);
}

// A collapsed rank: its label and one strip of its activity over the view.
export function paintStrip(f, g, s) {
  const c = f.c, y = g.y;
  c.fillStyle = g.straggler ? RED : g.late ? ORANGE : '#4a5266';
  c.font = `${g.straggler || g.late ? '600 ' : ''}11px system-ui, sans-serif`;
  c.fillText(`▸ ${rankTitle(g)}`, 6, y + 11);
  if (g.straggler || g.late) c.fillRect(0, y, 4, STRIP);
  c.fillStyle = '#f3f4f6';
  c.fillRect(GUTTER, y, f.pw, STRIP);
  if (!s) return;
  // The strip's columns cropped to the plot (no clip region per row).
  const xa = f.x(s.t0), xb = f.x(s.t1), cols = s.img.width;
  const d0 = Math.max(GUTTER, xa), d1 = Math.min(GUTTER + f.pw, xb);
  if (d1 <= d0) return;
  const k = cols / (xb - xa);
  c.drawImage(s.img, (d0 - xa) * k, s.row, (d1 - d0) * k, 1, d0, y, d1 - d0, STRIP);
  f.strips++;
}

function rankTitle(g) {
  const mark = g.straggler ? '  ◀ straggler' : g.late ? `  ◀ late ${g.late}×` : '';
  return `rank ${g.rank}${g.host ? ' · ' + g.host : ''}${mark}`;
}

// One GPU's memory over the view: allocated filled, reserved as a line,
// both on the scale of the larger's peak in view; the allocated peak in
// view is printed at the left. Each
// point is the largest sample of its pixel column (/api/counters), so the
// peak is drawn; between samples the level holds.
function paintMemory(f, e, device, y) {
  const c = f.c, right = GUTTER + f.pw;
  c.fillStyle = '#f1f7f2';
  c.fillRect(GUTTER, y, f.pw, MEM_ROW);
  const series = e ? e.memory.filter((s) => s.device === device) : [];
  const alloc = series.find((s) => s.name === 'Total Allocated'), resv = series.find((s) => s.name === 'Total Reserved');
  const top = (s) => (s ? Math.max(s.before ?? 0, ...s.points.map((p) => p[1])) : 0);
  const peak = Math.max(top(alloc), top(resv));
  c.fillStyle = '#2e6b3a';
  c.font = '11px system-ui, sans-serif';
  c.fillText(`GPU ${device} memory`, 14, y + 11);
  if (!peak) return;
  c.fillStyle = '#5d6b60';
  c.font = '10px system-ui, sans-serif';
  c.fillText(`peak ${mib(top(alloc))} allocated`, 14, y + 24);
  const { t0, t1, px } = e.mem, colNs = (t1 - t0) / px;
  const yOf = (v) => y + MEM_ROW - 1 - (v / peak) * (MEM_ROW - 3);
  // Steps from the level before the view through each column's peak.
  const path = (s) => {
    const pts = [];
    let x = GUTTER, v = s.before;
    for (const [col, val] of s.points) {
      const xc = Math.max(GUTTER, Math.min(right, f.x(t0 + col * colNs)));
      if (v != null) pts.push([x, v], [xc, v]);
      x = xc; v = val;
    }
    if (v != null) pts.push([x, v], [right, v]);
    return pts;
  };
  c.save();
  c.beginPath(); c.rect(GUTTER, y, f.pw, MEM_ROW); c.clip();
  if (resv) {
    c.strokeStyle = '#9bb5a0'; c.lineWidth = 1;
    c.beginPath();
    path(resv).forEach(([x, v], i) => (i ? c.lineTo(x, yOf(v)) : c.moveTo(x, yOf(v))));
    c.stroke();
  }
  if (alloc) {
    const pts = path(alloc);
    if (pts.length) {
      c.fillStyle = 'rgba(56, 142, 60, 0.55)';
      c.beginPath();
      c.moveTo(pts[0][0], y + MEM_ROW - 1);
      for (const [x, v] of pts) c.lineTo(x, yOf(v));
      c.lineTo(pts[pts.length - 1][0], y + MEM_ROW - 1);
      c.closePath();
      c.fill();
      f.memory++;
    }
  }
  c.restore();
}

function mib(bytes) {
  return bytes >= 1024 * 1048576 ? `${(bytes / 1073741824).toFixed(2)} GiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}

// The rank's stitched NVTX ranges: [rank, id, ts, dur, depth, name, late_rank, skew_ns, n];
// n > 1: a run of n ranges too narrow to draw apart, drawn lighter.
function paintNvtx(f, g, e) {
  const c = f.c, h = g.nvRows * NV_ROW;
  c.fillStyle = '#f6f3fb';
  c.fillRect(GUTTER, g.nvY, f.pw, h);
  c.fillStyle = '#5b4a7a';
  c.font = '11px system-ui, sans-serif';
  c.fillText('NVTX (stitched)', 14, g.nvY + 11);
  if (!e || !e.nvtx.length) return;
  const names = e.ans.names, right = GUTTER + f.pw;
  c.save();
  c.beginPath(); c.rect(GUTTER, g.nvY, f.pw, h); c.clip();
  c.font = '10px system-ui, sans-serif';
  for (const r of e.nvtx) {
    const [, id, ts, du, depth, ni, late, , n] = r;
    let x = f.x(ts), w = Math.max(1, du * f.scale);
    if (x + w < GUTTER || x > right) continue;
    if (x < GUTTER - 1) { w -= GUTTER - 1 - x; x = GUTTER - 1; }
    const y = g.nvY + Math.min(depth, g.nvRows - 1) * NV_ROW, name = ni >= 0 ? names[ni] : '';
    const sel = f.nvSel === id;
    c.fillStyle = sel ? '#1d2330' : nvtxColor(name);
    if (n > 1) c.globalAlpha = 0.55;   // a run of ranges too narrow to tell apart
    c.fillRect(x, y + 1, w, NV_ROW - 2);
    c.globalAlpha = 1;
    if (late === g.rank) {   // this rank entered last: it held the others up
      c.lineWidth = 1.5;
      c.strokeStyle = RED;
      c.strokeRect(x + 0.75, y + 1.75, Math.max(1, w - 1.5), NV_ROW - 3.5);
    }
    if (w > 36) {
      c.fillStyle = sel ? '#fff' : '#10131a';
      c.fillText(fit(c, n > 1 ? `${n} × ${name}…` : name, w - 4), x + 2, y + 10);
    }
    f.hits.push({ x, y: y - f.top, w, h: NV_ROW, nvtx: id, rank: g.rank, late, n });
    f.nvtx++;
  }
  c.restore();
}

function paintTrack(f, t, e) {
  const c = f.c, h = t.rows * ROW;
  if (t.y + h < f.top + AXIS || t.y > f.top + f.height) return;   // off screen: the group only straddles the edge
  c.fillStyle = '#fafbfc';
  c.fillRect(GUTTER, t.y, f.pw, h);
  c.fillStyle = '#4a5266';
  c.font = '11px system-ui, sans-serif';
  c.fillText(fit(c, t.label, GUTTER - 20), 14, t.y + 12);
  const d = e && e.tracks.get(t.id);
  if (!d) return;
  c.save();
  c.beginPath(); c.rect(GUTTER, t.y, f.pw, h); c.clip();
  paintDense(f, d, t, h, e.ans);
  paintSlices(f, d, t, e.ans);
  if (f.hl) paintMembers(f, f.hl.byTrack.get(t.id), t.y + 1, h - 2);
  c.restore();
}

function paintDense(f, d, t, h, ans) {
  const c = f.c, cw = ans.col_ns;
  for (const [col, , busy] of d.dense) {
    const x0 = f.x(ans.t0 + col * cw), x1 = f.x(ans.t0 + (col + 1) * cw), bh = Math.max(3, h * busy);
    c.fillStyle = DENSE[Math.round(Math.min(1, busy) * 32)];
    c.fillRect(x0, t.y + h - bh, Math.max(1, x1 - x0), bh);
  }
}

// Slices: [id, ts, dur, depth, name index, category, collective]. The
// hottest loop of a frame (thousands of slices when ranks are expanded):
// plain indexing, and colours looked up by name index once per answer.
function paintSlices(f, d, t, ans) {
  const c = f.c, right = GUTTER + f.pw, names = ans.names, colors = ans.colors || (ans.colors = []);
  c.font = '10px system-ui, sans-serif';
  for (const s of d.slices) {
    const id = s[0], ni = s[4];
    let x = f.x(s[1]), w = Math.max(1, s[2] * f.scale);
    if (x + w < GUTTER || x > right) continue;
    if (x < GUTTER - 1) { w -= GUTTER - 1 - x; x = GUTTER - 1; }
    const y = t.y + Math.min(s[3], t.rows - 1) * ROW, name = ni >= 0 ? names[ni] : '';
    const sel = f.selected === id;
    c.fillStyle = sel ? '#1d2330' : ni >= 0 ? colors[ni] || (colors[ni] = colorOf(name, s[5])) : colorOf(name, s[5]);
    c.fillRect(x, y + 1, w, ROW - 2);
    if (w > 36) {
      c.fillStyle = sel ? '#fff' : '#10131a';
      c.fillText(fit(c, name, w - 4), x + 2, y + 11);
    }
    f.hits.push({ x, y: y - f.top, w, h: ROW, id, coll: s[6], track: t.id });
    f.slices++;
  }
}

// The highlighted collective's members on one track (expanded) or one
// summary strip (collapsed): where each rank entered and left it, the late
// rank in red.
export function paintMembers(f, members, y, h) {
  if (!members) return;
  const c = f.c;
  c.lineWidth = 2;
  for (const m of members) {
    const x0 = f.x(m.enter_ns), x1 = f.x(m.exit_ns);
    c.strokeStyle = m.rank === f.hl.late_rank ? RED : '#f9a825';
    c.strokeRect(x0, y, Math.max(3, x1 - x0), h);
  }
}

export function paintHighlightLines(f) {
  if (!f.hl || !f.hl.arrivals.length) return;
  const c = f.c;
  let lo = Infinity, hi = -Infinity;
  for (const a of f.hl.arrivals) { lo = Math.min(lo, a.enter_ns); hi = Math.max(hi, a.enter_ns); }
  c.save();
  c.setLineDash([4, 3]);
  c.strokeStyle = RED;
  for (const t of [lo, hi]) {
    const x = f.x(t);
    if (x < GUTTER || x > f.width) continue;
    c.beginPath(); c.moveTo(x, f.top + AXIS); c.lineTo(x, f.top + f.height); c.stroke();
  }
  c.restore();
}

// The critical path: a bar in each rank's header band (the middle of its
// strip when collapsed) where its work or a transfer is on the path, and a
// line where the path moves from one rank to another, off screen or not.
export function paintPath(f, path, rows) {
  const c = f.c, lo = GUTTER, hi = GUTTER + f.pw;
  const yOf = (g) => (rows.isExpanded(g) ? g.y + HEAD - 8 : g.y + (STRIP - 6) / 2);
  let prev = null;
  for (const s of path.segments) {
    const g = rows.byRank.get(s.rank);
    if (!g) continue;
    const x0 = Math.max(lo, f.x(s.start_ns)), x1 = Math.min(hi, f.x(s.end_ns));
    if (x1 > x0 - 1) {
      c.fillStyle = s.kind === 'comm' ? '#1565c0' : ORANGE;
      c.fillRect(x0, yOf(g), Math.max(2, x1 - x0), 6);
      if (s.kind === 'work' && s.compute_ns > 0 && s.end_ns > s.start_ns) {   // the compute share, darker
        c.fillStyle = '#8d2a00';
        c.fillRect(x0, yOf(g) + 4, Math.max(1, (x1 - x0) * (s.compute_ns / (s.end_ns - s.start_ns))), 2);
      }
    }
    if (prev && prev.rank !== s.rank) {
      const gp = rows.byRank.get(prev.rank), x = f.x(s.start_ns);
      if (gp && x >= lo && x <= hi) {
        c.strokeStyle = ORANGE;
        c.lineWidth = 2;
        c.beginPath(); c.moveTo(x, yOf(gp) + 3); c.lineTo(x, yOf(g) + 3); c.stroke();
      }
    }
    prev = s;
  }
}

// The time axis, pinned to the top of the canvas, with its grid lines
// through the rows below. A label that would run past the canvas's right
// edge is left out (its grid line stays): cut, "129.0 ms" read as "12".
// Returns the right end of the last label drawn (CSS px).
export function paintAxis(f) {
  const c = f.c, span = f.t1 - f.t0;
  const step = niceStep(span / Math.max(2, f.pw / 110));
  let right = 0;
  c.fillStyle = '#fff';
  c.fillRect(0, f.top, f.width, AXIS - 2);
  c.strokeStyle = '#dde1e8'; c.fillStyle = '#4a5266'; c.font = '11px system-ui, sans-serif';
  c.lineWidth = 1;
  for (let t = Math.ceil(f.t0 / step) * step; t <= f.t1; t += step) {
    const x = f.x(t), label = dur(t), end = x + 3 + c.measureText(label).width;
    c.beginPath(); c.moveTo(x, f.top + AXIS - 8); c.lineTo(x, f.top + f.height); c.stroke();
    if (end > f.width) continue;
    c.fillText(label, x + 3, f.top + 14);
    right = end;
  }
  return right;
}

// NVTX ranges: a stable colour per name, lighter than the slices below.
function nvtxColor(name) {
  let h = 7;
  for (let i = 0; i < (name || '').length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360}, 60%, ${72 + (h >> 9) % 10}%)`;
}

function fit(c, text, w) {
  if (!text) return '';
  if (c.measureText(text).width <= w) return text;
  let n = Math.floor((text.length * w) / c.measureText(text).width);
  while (n > 1 && c.measureText(text.slice(0, n) + '…').width > w) n--;
  return n > 1 ? text.slice(0, n) + '…' : '';
}
