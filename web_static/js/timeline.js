// The merged timeline on a canvas: one group per rank (its CPU threads,
// then its GPU streams), all on the aligned clock. The server does the
// level of detail (/api/timeline): slices narrower than a pixel column are
// sent one by one only where a column holds few of them; busier columns
// come as [column, count, busy fraction] and are drawn as a shaded band.
// Each rank group starts with a row of its stitched NVTX ranges (the same
// range matched across ranks; nested ones below their parent), coloured by
// name, the range of the rank that entered last outlined in red; clicking
// one shows its skew and late rank. The critical path of the step in view
// (P, or the toolbar's button) is drawn as a bar in each rank's header band
// where that rank's work or a collective's transfer is on it, with a line
// where the path moves from one rank to another.
// State a test can read is mirrored on the canvas's data attributes.
import { api } from './api.js';
import { dur, el, clear, colorOf } from './fmt.js';

const GUTTER = 190;      // px of labels at the left
const AXIS = 26;         // px of time axis at the top
const ROW = 16;          // px per nesting depth
const HEAD = 20;         // px of a rank's header band
const GAP = 3;           // px between tracks
const MAX_ROWS = 16;     // deeper slices share the last row
const MIN_SPAN = 1000;   // ns: the closest zoom
const NV_ROW = 14;       // px per NVTX nesting depth
const NV_MAX_ROWS = 4;   // deeper NVTX ranges share the last row

export class Timeline {
  constructor({ canvas, wrap, details, range, onError }) {
    Object.assign(this, { canvas, wrap, details, range, onError });
    this.ctx = canvas.getContext('2d');
    this.groups = [];
    this.tracks = new Map();      // track id -> layout
    this.view = { t0: 0, t1: 1 };
    this.span = 1;
    this.data = null;             // last /api/timeline answer
    this.hits = [];               // drawn slices for clicks
    this.hl = null;               // highlighted collective instance
    this.nvSel = null;            // selected stitched NVTX range (/api/nvtx answer)
    this.path = null;             // the drawn critical path (/api/path/{step} answer)
    this.pathSteps = null;        // /api/path answer, fetched once
    this.seq = 0;
    this.timer = 0;
    this.bind();
  }

  // Sets the run: its ranks and tracks, the straggler, and the whole-run view.
  setRun(run, ranks, straggler) {
    // A whole-run view stays whole when a live run grows (judged against the
    // old span: grow() runs after this).
    const whole = this.viewSet && this.view.t0 <= 0 && this.view.t1 >= this.span;
    this.span = Math.max(1, run.span_ns || 1);
    if (whole) this.view = { t0: 0, t1: this.span };
    const old = new Map(this.groups.map((g) => [g.rank, g.nvRows]));
    this.groups = ranks.ranks.map((r) => ({
      rank: r.rank, host: r.host, straggler: r.rank === straggler, nvRows: old.get(r.rank) || 0,
      tracks: r.tracks.map((t) => ({ id: t.id, kind: t.kind, name: t.name, rows: 1, y: 0 })),
    }));
    this.tracks = new Map(this.groups.flatMap((g) => g.tracks.map((t) => [t.id, t])));
    this.canvas.dataset.groups = String(this.groups.length);
    this.canvas.dataset.straggler = straggler == null ? '' : String(straggler);
    if (!this.viewSet) this.reset();
    else this.refresh();
  }

  // Live mode: the run grew; keep the whole-run view whole.
  grow(run) {
    const whole = this.view.t0 <= 0 && this.view.t1 >= this.span;
    this.span = Math.max(1, run.span_ns || 1);
    if (whole) this.view = { t0: 0, t1: this.span };
    this.refresh();
  }

  reset() { this.viewSet = true; this.setView(0, this.span); }

  setView(t0, t1) {
    const span = Math.max(MIN_SPAN, t1 - t0), mid = (t0 + t1) / 2;
    if (t1 - t0 < MIN_SPAN) { t0 = mid - span / 2; t1 = mid + span / 2; }
    const maxSpan = this.span * 1.5;
    if (t1 - t0 > maxSpan) { t0 = mid - maxSpan / 2; t1 = mid + maxSpan / 2; }
    this.view = { t0, t1 };
    this.draw();
    this.refresh();
  }

  zoom(factor, atX) {
    const { t0, t1 } = this.view, pw = this.plotWidth();
    const f = atX == null ? 0.5 : Math.min(1, Math.max(0, (atX - GUTTER) / pw));
    const at = t0 + (t1 - t0) * f, span = (t1 - t0) * factor;
    this.setView(at - span * f, at - span * f + span);
  }

  pan(fraction) {
    const s = this.view.t1 - this.view.t0;
    this.setView(this.view.t0 + s * fraction, this.view.t1 + s * fraction);
  }

  plotWidth() { return Math.max(50, this.cssWidth - GUTTER - 8); }

  // Asks the server for the current view, debounced; late answers to older
  // views are dropped.
  refresh() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetchView(), 40);
  }

  async fetchView() {
    const seq = ++this.seq;
    const params = { t0: Math.floor(this.view.t0), t1: Math.ceil(this.view.t1), px: Math.round(this.plotWidth()) };
    this.canvas.dataset.request = new URLSearchParams(params).toString();
    try {
      const data = await api.timeline(params);
      if (seq !== this.seq) return;
      this.data = data;
      this.data.byTrack = new Map(data.tracks.map((t) => [t.id, t]));
      this.data.byRank = new Map();
      for (const r of data.nvtx || []) {
        if (!this.data.byRank.has(r[0])) this.data.byRank.set(r[0], []);
        this.data.byRank.get(r[0]).push(r);
      }
      this.growRows(data);
      this.canvas.dataset.loaded = String(seq);
      this.draw();
    } catch (e) { this.onError(e); }
  }

  growRows(data) {
    let changed = false;
    for (const g of this.groups) {
      let rows = g.nvRows;
      for (const r of this.data.byRank.get(g.rank) || []) rows = Math.max(rows, Math.min(NV_MAX_ROWS, r[4] + 1));
      if (rows !== g.nvRows) { g.nvRows = rows; changed = true; }
    }
    for (const t of data.tracks) {
      const lay = this.tracks.get(t.id);
      if (!lay) continue;
      let rows = lay.rows;
      for (const s of t.slices) rows = Math.max(rows, Math.min(MAX_ROWS, s[3] + 1));
      if (rows !== lay.rows) { lay.rows = rows; changed = true; }
    }
    if (changed) this.layout();
  }

  layout() {
    let y = AXIS;
    for (const g of this.groups) {
      g.y = y; y += HEAD;
      g.nvY = y; y += g.nvRows ? g.nvRows * NV_ROW + GAP : 0;
      for (const t of g.tracks) { t.y = y; y += t.rows * ROW + GAP; }
      g.h = y - g.y;
    }
    this.height = y + 8;
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    this.cssWidth = Math.max(400, this.wrap.clientWidth);
    if (!this.height) this.layout();
    this.canvas.style.width = `${this.cssWidth}px`;
    this.canvas.style.height = `${this.height}px`;
    this.canvas.width = Math.round(this.cssWidth * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  x(t) { return GUTTER + ((t - this.view.t0) / (this.view.t1 - this.view.t0)) * this.plotWidth(); }

  draw() {
    this.layout();
    this.resize();
    const c = this.ctx;
    c.clearRect(0, 0, this.cssWidth, this.height);
    this.hits = [];
    let drawn = 0;
    this.nvDrawn = 0;
    for (const g of this.groups) drawn += this.drawGroup(g);
    this.drawAxis();
    this.drawHighlightLines();
    this.drawPath();
    const { t0, t1 } = this.view;
    this.range.textContent = `${dur(t0)} to ${dur(t1)} (${dur(t1 - t0)} shown)`;
    Object.assign(this.canvas.dataset, {
      t0: String(Math.round(t0)), t1: String(Math.round(t1)), slices: String(drawn),
      nvtx: String(this.nvDrawn), nvtxGroups: String(this.groups.filter((g) => g.nvRows > 0).length),
    });
  }

  drawGroup(g) {
    const c = this.ctx;
    c.fillStyle = g.straggler ? '#fdecea' : '#eef0f4';
    c.fillRect(0, g.y, this.cssWidth, HEAD - 2);
    c.fillStyle = g.straggler ? '#c62828' : '#1d2330';
    c.font = '600 12px system-ui, sans-serif';
    c.fillText(`rank ${g.rank}${g.host ? ' · ' + g.host : ''}${g.straggler ? '  ◀ straggler' : ''}`, 8, g.y + 13);
    if (g.straggler) { c.fillRect(0, g.y, 4, g.h - GAP); }
    if (g.nvRows) this.drawNvtx(g);
    let drawn = 0;
    for (const t of g.tracks) drawn += this.drawTrack(t);
    return drawn;
  }

  // The rank's stitched NVTX ranges: [rank, id, ts, dur, depth, name, late_rank, skew_ns, n];
  // n > 1: a run of n ranges too narrow to draw apart, drawn lighter.
  drawNvtx(g) {
    const c = this.ctx, pw = this.plotWidth(), h = g.nvRows * NV_ROW;
    c.fillStyle = '#f6f3fb';
    c.fillRect(GUTTER, g.nvY, pw, h);
    c.fillStyle = '#5b4a7a';
    c.font = '11px system-ui, sans-serif';
    c.fillText('NVTX (stitched)', 10, g.nvY + 11);
    const ranges = this.data && this.data.byRank.get(g.rank);
    if (!ranges) return;
    const names = this.data.names, scale = pw / (this.view.t1 - this.view.t0);
    c.save();
    c.beginPath(); c.rect(GUTTER, g.nvY, pw, h); c.clip();
    c.font = '10px system-ui, sans-serif';
    for (const r of ranges) {
      const [, id, ts, du, depth, ni, late, , n] = r;
      let x = this.x(ts), w = Math.max(1, du * scale);
      if (x + w < GUTTER || x > this.cssWidth) continue;
      if (x < GUTTER - 1) { w -= GUTTER - 1 - x; x = GUTTER - 1; }
      const y = g.nvY + Math.min(depth, g.nvRows - 1) * NV_ROW, name = ni >= 0 ? names[ni] : '';
      const sel = this.nvSel && this.nvSel.id === id;
      c.fillStyle = sel ? '#1d2330' : nvtxColor(name);
      if (n > 1) c.globalAlpha = 0.55;   // a run of ranges too narrow to tell apart
      c.fillRect(x, y + 1, w, NV_ROW - 2);
      c.globalAlpha = 1;
      if (late === g.rank) {   // this rank entered last: it held the others up
        c.lineWidth = 1.5;
        c.strokeStyle = '#c62828';
        c.strokeRect(x + 0.75, y + 1.75, Math.max(1, w - 1.5), NV_ROW - 3.5);
      }
      if (w > 36) {
        c.fillStyle = sel ? '#fff' : '#10131a';
        c.fillText(fit(c, n > 1 ? `${n} × ${name}…` : name, w - 4), x + 2, y + 10);
      }
      this.hits.push({ x, y, w, h: NV_ROW, nvtx: id, rank: g.rank, late, n });
      this.nvDrawn++;
    }
    c.restore();
  }

  drawTrack(t) {
    const c = this.ctx, h = t.rows * ROW, pw = this.plotWidth();
    c.fillStyle = '#fafbfc';
    c.fillRect(GUTTER, t.y, pw, h);
    c.fillStyle = '#4a5266';
    c.font = '11px system-ui, sans-serif';
    const label = `${t.kind === 'gpu_stream' ? 'GPU' : 'CPU'} ${t.name || t.id}`;
    c.fillText(label.length > 28 ? label.slice(0, 27) + '…' : label, 10, t.y + 12);
    const d = this.data && this.data.byTrack.get(t.id);
    if (!d) return 0;
    c.save();
    c.beginPath(); c.rect(GUTTER, t.y, pw, h); c.clip();
    this.drawDense(d, t, h);
    const n = this.drawSlices(d, t);
    this.drawHighlight(t, h);
    c.restore();
    return n;
  }

  drawDense(d, t, h) {
    const c = this.ctx, cw = this.data.col_ns;
    for (const [col, , busy] of d.dense) {
      const x0 = this.x(this.data.t0 + col * cw), x1 = this.x(this.data.t0 + (col + 1) * cw);
      c.fillStyle = `rgba(47, 111, 222, ${0.12 + 0.6 * busy})`;
      c.fillRect(x0, t.y + (h - Math.max(3, h * busy)), Math.max(1, x1 - x0), Math.max(3, h * busy));
    }
  }

  drawSlices(d, t) {
    const c = this.ctx, names = this.data.names, scale = this.plotWidth() / (this.view.t1 - this.view.t0);
    c.font = '10px system-ui, sans-serif';
    for (const s of d.slices) {
      const [id, ts, du, depth, ni, cat, coll] = s;
      let x = this.x(ts), w = Math.max(1, du * scale);
      if (x + w < GUTTER || x > this.cssWidth) continue;
      if (x < GUTTER - 1) { w -= GUTTER - 1 - x; x = GUTTER - 1; }
      const y = t.y + Math.min(depth, t.rows - 1) * ROW, name = ni >= 0 ? names[ni] : '';
      c.fillStyle = this.selected === id ? '#1d2330' : colorOf(name, cat);
      c.fillRect(x, y + 1, w, ROW - 2);
      if (w > 36) {
        c.fillStyle = this.selected === id ? '#fff' : '#10131a';
        c.fillText(fit(c, name, w - 4), x + 2, y + 11);
      }
      this.hits.push({ x, y, w, h: ROW, id, coll, track: t.id });
    }
    return d.slices.length;
  }

  drawHighlight(t, h) {
    if (!this.hl) return;
    const c = this.ctx;
    for (const m of this.hl.members) {
      if (m.track !== t.id) continue;
      const x0 = this.x(m.enter_ns), x1 = this.x(m.exit_ns);
      c.lineWidth = 2;
      c.strokeStyle = m.rank === this.hl.late_rank ? '#c62828' : '#f9a825';
      c.strokeRect(x0, t.y + 1, Math.max(3, x1 - x0), h - 2);
    }
  }

  drawHighlightLines() {
    if (!this.hl || !this.hl.arrivals.length) return;
    const c = this.ctx, a = this.hl.arrivals.map((r) => r.enter_ns);
    c.save();
    c.setLineDash([4, 3]);
    c.strokeStyle = '#c62828';
    for (const t of [Math.min(...a), Math.max(...a)]) {
      const x = this.x(t);
      if (x < GUTTER || x > this.cssWidth) continue;
      c.beginPath(); c.moveTo(x, AXIS); c.lineTo(x, this.height); c.stroke();
    }
    c.restore();
  }

  drawAxis() {
    const c = this.ctx, { t0, t1 } = this.view, pw = this.plotWidth();
    const step = niceStep((t1 - t0) / Math.max(2, pw / 110));
    c.fillStyle = '#fff';
    c.fillRect(0, 0, this.cssWidth, AXIS - 2);
    c.strokeStyle = '#dde1e8'; c.fillStyle = '#4a5266'; c.font = '11px system-ui, sans-serif';
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = this.x(t);
      c.beginPath(); c.moveTo(x, AXIS - 8); c.lineTo(x, this.height); c.stroke();
      c.fillText(dur(t), x + 3, 14);
    }
  }

  // ---- interaction ----

  bind() {
    const cv = this.canvas;
    cv.addEventListener('wheel', (e) => {
      if (e.shiftKey) return;   // shift+wheel scrolls the page
      e.preventDefault();
      const r = cv.getBoundingClientRect();
      if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) this.pan(e.deltaX / this.plotWidth());
      else this.zoom(Math.exp(e.deltaY * 0.0015), e.clientX - r.left);
    }, { passive: false });
    cv.addEventListener('mousedown', (e) => {
      const r = cv.getBoundingClientRect();
      this.drag = { x0: e.clientX, t0: this.view.t0, t1: this.view.t1, moved: false, cx: e.clientX - r.left, cy: e.clientY - r.top };
      cv.classList.add('dragging');
    });
    window.addEventListener('mousemove', (e) => {
      if (!this.drag) return;
      const dx = e.clientX - this.drag.x0;
      if (Math.abs(dx) > 3) this.drag.moved = true;
      if (!this.drag.moved) return;
      const dt = (-dx / this.plotWidth()) * (this.drag.t1 - this.drag.t0);
      this.setView(this.drag.t0 + dt, this.drag.t1 + dt);
    });
    window.addEventListener('mouseup', () => {
      if (!this.drag) return;
      const d = this.drag;
      this.drag = null;
      cv.classList.remove('dragging');
      if (!d.moved) this.click(d.cx, d.cy);
    });
    this.wrap.addEventListener('keydown', (e) => this.key(e));
    window.addEventListener('resize', () => { this.draw(); this.refresh(); });
  }

  key(e) {
    const k = e.key;
    if (k === 'w' || k === '+' || k === '=') this.zoom(0.7);
    else if (k === 's' || k === '-') this.zoom(1 / 0.7);
    else if (k === 'a' || k === 'ArrowLeft') this.pan(-0.15);
    else if (k === 'd' || k === 'ArrowRight') this.pan(0.15);
    else if (k === '0') this.reset();
    else if (k === 'p' || k === 'P') this.togglePath().catch(this.onError);
    else return;
    e.preventDefault();
  }

  async click(x, y) {
    const hit = this.hits.slice().reverse().find((h) => x >= h.x && x <= h.x + Math.max(h.w, 2) && y >= h.y && y <= h.y + h.h);
    if (!hit) { this.selected = null; this.hl = null; this.selectNvtx(null); this.showNothing(); this.draw(); return; }
    if (hit.nvtx) {
      this.selected = null;
      try { this.selectNvtx(await api.nvtx(hit.nvtx)); } catch (e) { this.onError(e); }
      return;
    }
    this.selectNvtx(null);
    this.selected = hit.id;
    this.draw();
    try {
      const s = await api.slice(hit.id);
      const coll = hit.coll || s.collective;
      const inst = coll ? await api.collective(coll) : null;
      this.setHighlight(inst);
      this.showSlice(s, inst);
    } catch (e) { this.onError(e); }
  }

  // Highlights a collective instance on every rank (and shows it when
  // asked from a table: the view moves to it).
  async showInstance(row, move = true) {
    const inst = row.pg != null && row.seq != null ? await api.collectiveFind(row.pg, row.seq) : await api.collective(row.id);
    this.setHighlight(inst);
    if (move) {
      const lo = Math.min(...inst.members.map((m) => m.enter_ns)), hi = Math.max(...inst.members.map((m) => m.exit_ns));
      const pad = Math.max(MIN_SPAN, (hi - lo) * 0.4);
      this.setView(lo - pad, hi + pad);
    }
    this.showSlice(null, inst);
  }

  setHighlight(inst) {
    this.hl = inst;
    const ds = this.canvas.dataset;
    ds.highlight = inst ? [...new Set(inst.members.map((m) => m.rank))].sort((a, b) => a - b).join(',') : '';
    ds.lateRank = inst && inst.late_rank != null ? String(inst.late_rank) : '';
    this.draw();
  }

  // Selects a stitched NVTX range (or none): outlined on every rank, its
  // skew and late rank in the details.
  selectNvtx(nv) {
    this.nvSel = nv;
    const ds = this.canvas.dataset;
    ds.nvtxSelected = nv ? String(nv.id) : '';
    ds.nvtxLateRank = nv && nv.late_rank != null ? String(nv.late_rank) : '';
    if (!nv) return;
    this.hl = null;
    this.draw();
    const box = clear(this.details);
    box.append(el('h3', { text: nv.name || '(unnamed)' }));
    box.append(el('p', { class: 'muted', text: 'stitched NVTX range' }));
    box.append(kvTable([['path', nv.path], ['step', nv.step], ['occurrence', nv.occurrence], ['ranks', nv.ranks],
      ['GPU time (all ranks)', nv.gpu_ns != null ? dur(nv.gpu_ns) : null], ['GPU ops', nv.gpu_ops]]));
    box.append(el('p', {}, 'skew ', el('b', { text: dur(nv.skew_ns || 0) }),
      nv.late_rank != null ? el('span', {}, ' · late rank ', el('b', { class: 'late', text: String(nv.late_rank) })) : ''));
    const t = el('table');
    t.append(el('tr', {}, el('td', { text: 'rank' }), el('td', { text: 'entered after the first' }), el('td', { text: 'duration' })));
    for (const m of nv.members) {
      t.append(el('tr', { class: m.rank === nv.late_rank ? 'late' : '' }, el('td', { text: String(m.rank) }),
        el('td', { text: dur(m.lag_ns) }), el('td', { text: dur(m.dur_ns) })));
    }
    box.append(t);
  }

  // The critical path of the step that overlaps the view most (off when
  // drawn), with its summary and segments in the details.
  async togglePath() {
    const ds = this.canvas.dataset;
    if (this.path) {
      this.path = null;
      Object.assign(ds, { path: '', pathStep: '', pathRanks: '' });
      this.draw();
      return;
    }
    if (!this.pathSteps) this.pathSteps = (await api.pathSteps()).steps;
    const { t0, t1 } = this.view, mid = (t0 + t1) / 2;
    let best = null, bestScore = -Infinity;
    for (const s of this.pathSteps) {
      const overlap = Math.min(t1, s.end_ns) - Math.max(t0, s.start_ns);
      const score = overlap > 0 ? overlap : -Math.abs((s.start_ns + s.end_ns) / 2 - mid);
      if (score > bestScore) { bestScore = score; best = s; }
    }
    if (!best) throw new Error('this run has no critical path (no steps)');
    const [p, rep] = await Promise.all([api.path(best.step), api.report('critical-path', { steps: best.step })]);
    this.path = p;
    const ranks = [...new Set(p.segments.map((s) => s.rank))].sort((a, b) => a - b);
    Object.assign(ds, { path: String(p.segments.length), pathStep: String(p.step), pathRanks: ranks.join(',') });
    if (best.start_ns < t0 || best.end_ns > t1 || best.end_ns - best.start_ns < (t1 - t0) / 2) {
      const pad = (best.end_ns - best.start_ns) * 0.05;
      this.setView(best.start_ns - pad, best.end_ns + pad);
    } else {
      this.draw();
    }
    const info = (rep.steps || []).find((s) => s.step === p.step);
    const box = clear(this.details);
    box.append(el('h3', { text: `critical path · step ${p.step}` }));
    if (info) box.append(el('p', {}, el('b', { text: dur(info.path_ms * 1e6) }), ` across ${info.ranks} rank(s): ${info.summary}`));
    const t = el('table');
    t.append(el('tr', {}, ...['rank', 'kind', 'what', 'time', 'GPU'].map((h) => el('td', { text: h }))));
    for (const s of p.segments) {
      const what = s.kind === 'comm' ? `${s.name} on ${s.dim || s.pg || '?'}` : s.name;
      t.append(el('tr', { class: s.kind === 'comm' ? 'path-comm' : 'path-work' }, el('td', { text: String(s.rank) }),
        el('td', { text: s.kind }), el('td', { text: what }), el('td', { text: dur(s.end_ns - s.start_ns) }),
        el('td', { text: s.kind === 'work' ? dur(s.compute_ns) : '' })));
    }
    box.append(t);
  }

  drawPath() {
    if (!this.path) return;
    const c = this.ctx, segs = this.path.segments, byRank = new Map(this.groups.map((g) => [g.rank, g]));
    const lo = GUTTER, hi = this.cssWidth;
    const yOf = (g) => g.y + HEAD - 8;
    c.save();
    let prev = null;
    for (const s of segs) {
      const g = byRank.get(s.rank);
      if (!g) continue;
      const x0 = Math.max(lo, this.x(s.start_ns)), x1 = Math.min(hi, this.x(s.end_ns));
      if (x1 > x0 - 1) {
        c.fillStyle = s.kind === 'comm' ? '#1565c0' : '#e65100';
        c.fillRect(x0, yOf(g), Math.max(2, x1 - x0), 6);
        if (s.kind === 'work' && s.compute_ns > 0 && s.end_ns > s.start_ns) {   // the compute share, darker
          c.fillStyle = '#8d2a00';
          c.fillRect(x0, yOf(g) + 4, Math.max(1, (x1 - x0) * (s.compute_ns / (s.end_ns - s.start_ns))), 2);
        }
      }
      if (prev && prev.rank !== s.rank) {
        const gp = byRank.get(prev.rank), x = this.x(s.start_ns);
        if (gp && x >= lo && x <= hi) {
          c.strokeStyle = '#e65100';
          c.lineWidth = 2;
          c.beginPath(); c.moveTo(x, yOf(gp) + 3); c.lineTo(x, yOf(g) + 3); c.stroke();
        }
      }
      prev = s;
    }
    c.restore();
  }

  showNothing() { clear(this.details).append(el('p', { class: 'muted', text: 'Click a slice.' })); }

  showSlice(s, inst) {
    const box = clear(this.details);
    if (s) {
      box.append(el('h3', { text: s.name || '(unnamed)' }));
      const rows = [['rank', s.rank], ['track', `${s.kind === 'gpu_stream' ? 'GPU' : 'CPU'} ${s.track_name || s.track}`],
        ['category', s.category], ['start', dur(s.ts)], ['duration', dur(s.dur)], ['depth', s.depth],
        ['slice id', s.id], ['correlation', s.correlation], ['iteration', s.iteration], ['bytes', s.bytes]];
      box.append(kvTable(rows));
    }
    if (inst) box.append(instanceView(inst));   // the instance before the long args list
    if (s && s.args && typeof s.args === 'object') {
      box.append(el('h3', { text: 'arguments' }));
      box.append(kvTable(Object.entries(s.args).map(([k, v]) => [k, typeof v === 'object' ? JSON.stringify(v) : v])));
    }
  }
}

function kvTable(rows) {
  const t = el('table');
  for (const [k, v] of rows) if (v != null && v !== '') t.append(el('tr', {}, el('td', { text: k }), el('td', { text: String(v) })));
  return t;
}

function instanceView(inst) {
  const box = el('div', { class: 'instance' });
  box.append(el('h3', { text: `${inst.op} · pg ${inst.pg} · seq ${inst.seq ?? '?'}` }));
  box.append(el('p', {}, 'skew ', el('b', { text: dur(inst.skew_us * 1000) }),
    inst.late_rank != null ? el('span', {}, ' · late rank ', el('b', { class: 'late', text: String(inst.late_rank) })) : ''));
  const t = el('table');
  t.append(el('tr', {}, el('td', { text: 'rank' }), el('td', { text: 'arrived after the first' })));
  for (const a of inst.arrivals) {
    t.append(el('tr', { class: a.rank === inst.late_rank ? 'late' : '' }, el('td', { text: String(a.rank) }), el('td', { text: dur(a.lag_us * 1000) })));
  }
  box.append(t);
  return box;
}

// NVTX ranges: a stable colour per name, lighter than the slices below.
function nvtxColor(name) {
  let h = 7;
  for (let i = 0; i < (name || '').length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360}, 60%, ${72 + (h >> 9) % 10}%)`;
}

function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function fit(c, text, w) {
  if (!text) return '';
  if (c.measureText(text).width <= w) return text;
  let n = Math.floor((text.length * w) / c.measureText(text).width);
  while (n > 1 && c.measureText(text.slice(0, n) + '…').width > w) n--;
  return n > 1 ? text.slice(0, n) + '…' : '';
}
