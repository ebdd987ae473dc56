// The merged timeline on a canvas: one group per rank (its stitched NVTX
// row, its CPU threads, then its GPU streams), all on the aligned clock.
// Runs of a thousand ranks are far taller than any canvas may be, so the
// canvas is only as tall as the wrap's viewport and sticks to its top while
// the wrap scrolls a spacer of the full height (timeline_rows.js); a frame
// draws the rows in view and nothing else (timeline_paint.js), and data is
// fetched for those rows only (timeline_data.js). Past EXPAND_ALL_UP_TO
// ranks every rank starts collapsed to a strip of its activity; a click
// expands it.
// The server does the level of detail (/api/timeline): slices narrower than
// a pixel column are sent one by one only where a column holds few of them;
// busier columns come as [column, count, busy fraction] and are drawn as a
// shaded band. A stitched NVTX range (the same range matched across ranks)
// is outlined in red on the rank that entered last; clicking one shows its
// skew and late rank. The critical path of the step in view (P, or the
// toolbar's button) is drawn as a bar in each rank's header band where that
// rank's work or a collective's transfer is on it, with a line where the
// path moves from one rank to another. Capture windows (timeline_windows.js)
// are drawn over the rows they concern: a grey hatched band where the GPU
// was not recorded, a teal bar where a full capture ran; hovering one names
// it, and the legend lists them once a run has any.
// State a test can read is mirrored on the canvas's data attributes.
import { api } from './api.js';
import { dur, rankList } from './fmt.js';
import { Rows, GUTTER, AXIS, HEAD, STRIP } from './timeline_rows.js';
import { ViewData } from './timeline_data.js';
import { paintGroup, paintStrip, paintMembers, paintHighlightLines, paintPath, paintAxis } from './timeline_paint.js';
import { showNothing, showSlice, showNvtx, showPath } from './timeline_details.js';
import { paintGroupWindows, paintStripWindows, tipAt } from './timeline_windows.js';

const MIN_SPAN = 1000;    // ns: the closest zoom
const MAX_SIDE = 32767;   // device px: the most Chromium draws of a canvas side
const MAX_DPR = 2;        // sharper than this costs fill time for nothing visible
const PREFETCH = 0.5;     // viewport heights of strips fetched above and below the one on screen
const EXPAND_PATH_RANKS = 8;   // a critical path over at most this many ranks expands them

export class Timeline {
  constructor({ canvas, spacer, wrap, details, range, expandButton, legend, tip, onError }) {
    Object.assign(this, { canvas, spacer, wrap, details, range, expandButton, legend, tip, onError });
    this.ctx = canvas.getContext('2d');
    this.rows = new Rows();
    this.data = new ViewData();
    this.view = { t0: 0, t1: 1 };
    this.span = 1;
    this.gen = 0;                 // bumped when the run changes: every answer so far is stale
    this.hits = [];               // drawn slices and NVTX ranges, for clicks
    this.tips = [];               // drawn capture windows, for the hover tooltip
    this.hl = null;               // highlighted collective instance
    this.nvSel = null;            // selected stitched NVTX range (/api/nvtx answer)
    this.path = null;             // the drawn critical path (/api/path/{step} answer)
    this.pathSteps = null;        // /api/path answer, fetched once
    this.seq = 0;
    this.timer = 0;
    this.cssWidth = 0;
    this.cssHeight = 0;
    this.bind();
  }

  // Sets the run: its ranks and tracks, the straggler and the late ranks
  // (rank -> times late), and the whole-run view.
  setRun(run, ranks, { straggler, late }) {
    // A whole-run view stays whole when a live run grows (judged against the
    // old span: grow() runs after this).
    const whole = this.viewSet && this.view.t0 <= 0 && this.view.t1 >= this.span;
    this.span = Math.max(1, run.span_ns || 1);
    this.origin = Number(run.origin_ns || 0);   // a string (64 bits); a double is exact enough to place a step
    if (whole) this.view = { t0: 0, t1: this.span };
    this.rows.set(ranks.ranks, straggler, late);
    this.gen++;
    this.canvas.dataset.groups = String(this.rows.groups.length);
    this.canvas.dataset.straggler = straggler == null ? '' : String(straggler);
    this.expansionChanged();
    if (!this.viewSet) { this.reset(); return; }
    this.draw();
    this.refresh();
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

  // ---- rows ----

  // Expands (on) or collapses ranks, keeping the rows in view where they are.
  expand(ranks, on = true) {
    if (!this.keepInView(() => this.rows.setExpanded(ranks, on))) return;
    this.expansionChanged();
    this.draw();
    this.refresh();
  }

  toggleAll() { this.expand(this.rows.groups.map((g) => g.rank), !this.rows.allExpanded()); }

  expansionChanged() {
    this.canvas.dataset.expanded = rankList(this.rows.expanded);
    if (this.expandButton) this.expandButton.textContent = this.rows.allExpanded() ? 'collapse all' : 'expand all';
  }

  // Runs change() (true when it changed the layout) and scrolls so that the
  // row at the top of the view stays put, wherever rows above it grew; a
  // view scrolled to the end (End) stays at the end.
  keepInView(change) {
    const w = this.wrap, top = w.scrollTop, g = this.rows.groupAt(top + AXIS), off = g ? top - g.y : 0;
    const atEnd = top > 0 && top + w.clientHeight >= w.scrollHeight - 1;
    if (!change()) return false;
    this.rows.layout();
    this.resize();
    if (atEnd) w.scrollTop = w.scrollHeight;
    else if (g) w.scrollTop = g.y + off;
    return true;
  }

  // Expands a rank and scrolls it to the top of the view.
  goRank(rank) {
    if (!this.rows.byRank.has(rank)) throw new Error(`no rank ${rank} in this run`);
    this.expand([rank]);
    this.scrollToRank(rank);
  }

  scrollToRank(rank) {
    const g = this.rows.byRank.get(rank);
    if (!g) return;
    this.rows.layout();
    this.resize();
    this.wrap.scrollTop = g.y - AXIS;
    this.draw();
    this.refresh();
  }

  // Shows [t0, t1) with a margin, on this rank (expanded, scrolled to) if given.
  focus(rank, t0, t1) {
    if (rank != null) this.goRank(rank);
    if (t0 != null && t1 != null) {
      const pad = Math.max(MIN_SPAN, (t1 - t0) * 0.2);
      this.setView(t0 - pad, t1 + pad);
    }
  }

  // Shows a step: from the first rank's start to the last rank's end
  // (the steps report has them per rank, on the absolute clock).
  async showStep(step) {
    const rows = (await api.report('steps', { steps: step })).steps.filter((r) => r.step === step);
    if (!rows.length) throw new Error(`no step ${step} in this run`);
    let lo = Infinity, hi = -Infinity;
    for (const r of rows) { lo = Math.min(lo, r.start_ns); hi = Math.max(hi, r.start_ns + r.dur_us * 1000); }
    this.focus(null, lo - this.origin, hi - this.origin);
  }

  rankInView(rank) {
    const g = this.rows.byRank.get(rank), top = this.wrap.scrollTop;
    return g && g.y >= top + AXIS && g.y + Math.min(g.h, HEAD) <= top + this.cssHeight;
  }

  // ---- data ----

  // Asks the server for the current view, debounced; late answers to older
  // views are dropped (timeline_data.js).
  refresh() {
    clearTimeout(this.timer);
    this.canvas.dataset.pending = '1';
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.fetchView().catch((e) => { this.settled(); this.onError(e); });
    }, 40);
  }

  async fetchView() {
    if (!this.wrap.clientWidth) { this.settled(); return; }   // hidden tab: fetched when shown
    const view = { t0: Math.floor(this.view.t0), t1: Math.ceil(this.view.t1), px: Math.round(this.plotWidth()) };
    const key = `${this.gen}|${view.t0}|${view.t1}|${view.px}`;
    this.canvas.dataset.request = new URLSearchParams(view).toString();
    // Expanded ranks: those on screen (their answers are the big ones);
    // strips: also those a scroll of PREFETCH viewports would bring.
    const top = this.wrap.scrollTop, margin = this.cssHeight * PREFETCH;
    const [v0, v1] = this.rows.band(top + AXIS, top + this.cssHeight);
    const [i0, i1] = this.rows.band(top + AXIS - margin, top + this.cssHeight + margin);
    const detail = [], summary = [];
    for (let i = i0; i < i1; i++) {
      const g = this.rows.groups[i];
      if (!this.rows.isExpanded(g)) summary.push(g.rank);
      else if (i >= v0 && i < v1) detail.push(g.rank);
    }
    const seq = ++this.seq;
    const arrived = await this.data.load(key, view, detail, summary);
    if (arrived) {
      this.keepInView(() => arrived.reduce((grew, a) => this.rows.grow(a.rank, a.nvtx, a.tracks, a.memory) || grew, false));
      this.canvas.dataset.loaded = String(seq);
      this.draw();
    }
    this.settled();
  }

  // data-pending: requests in flight or about to be made; 0 once the view is drawn with all it asked for.
  settled() { this.canvas.dataset.pending = this.timer ? '1' : String(this.data.asked.size); }

  // ---- drawing ----

  // The wrap's tallest viewport: its max-height less its borders.
  viewportHeight() {
    if (!this.maxH) {
      const cs = getComputedStyle(this.wrap), max = parseFloat(cs.maxHeight);
      this.maxH = (Number.isFinite(max) ? max : window.innerHeight) - parseFloat(cs.borderTopWidth) - parseFloat(cs.borderBottomWidth);
    }
    return this.maxH;
  }

  // The canvas covers the viewport, never more; the spacer below it gives
  // the wrap the rows' full height to scroll.
  resize() {
    const w = Math.max(400, this.wrap.clientWidth);
    const h = Math.round(Math.max(AXIS, Math.min(this.rows.height, this.viewportHeight())));
    const spacer = `${Math.max(0, this.rows.height - h)}px`;
    if (this.spacer.style.height !== spacer) this.spacer.style.height = spacer;
    if (w === this.cssWidth && h === this.cssHeight) return;
    this.dpr = Math.min(window.devicePixelRatio || 1, MAX_DPR, MAX_SIDE / w, MAX_SIDE / h);
    this.cssWidth = w;
    this.cssHeight = h;
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.canvas.width = Math.round(w * this.dpr);
    this.canvas.height = Math.round(h * this.dpr);
    this.canvas.dataset.canvasHeight = String(h);
  }

  draw() {
    if (!this.wrap.clientWidth) return;   // hidden tab: drawn when shown
    const start = performance.now();
    this.rows.layout();
    this.resize();
    const c = this.ctx, top = this.wrap.scrollTop, { t0, t1 } = this.view, pw = this.plotWidth();
    const scale = pw / (t1 - t0);
    const f = { c, t0, t1, pw, scale, top, width: this.cssWidth, height: this.cssHeight,
      x: (t) => GUTTER + (t - t0) * scale, hits: [], tips: [], slices: 0, nvtx: 0, strips: 0, memory: 0, paused: 0, capture: 0,
      hl: this.hl, selected: this.selected, nvSel: this.nvSel && this.nvSel.id };
    c.setTransform(this.dpr, 0, 0, this.dpr, 0, -top * this.dpr);   // content pixels from here on
    c.imageSmoothingEnabled = false;   // strips: a cell's colour, not a blur of its neighbours
    c.clearRect(0, top, f.width, f.height);
    const [i0, i1] = this.rows.band(top + AXIS, top + f.height);
    for (let i = i0; i < i1; i++) {
      const g = this.rows.groups[i];
      if (this.rows.isExpanded(g)) {
        const e = this.data.detail.get(g.rank);
        paintGroup(f, g, e);
        paintGroupWindows(f, g, e && e.windows);
        continue;
      }
      const s = this.data.summary.get(g.rank);
      paintStrip(f, g, s);
      paintStripWindows(f, g, s && s.windows);
      if (this.hl) paintMembers(f, this.hl.byRank.get(g.rank), g.y + 1, STRIP - 2);
    }
    paintHighlightLines(f);
    if (this.path) paintPath(f, this.path, this.rows);
    const axisRight = paintAxis(f);
    this.hits = f.hits;
    this.tips = f.tips;
    if (this.legend) this.legend.hidden = !this.data.sawWindows;
    this.range.textContent = `${dur(t0)} to ${dur(t1)} (${dur(t1 - t0)} shown)`;
    const ds = this.canvas.dataset;
    Object.assign(ds, {
      t0: String(Math.round(t0)), t1: String(Math.round(t1)), slices: String(f.slices), nvtx: String(f.nvtx),
      nvtxGroups: String(this.rows.nvtxGroups()), memoryRows: String(this.rows.memoryRows()), memoryDrawn: String(f.memory),
      pausedDrawn: String(f.paused), captureDrawn: String(f.capture),
      visibleRanks: rankList(this.rows.groups.slice(i0, i1).map((g) => g.rank)), top: String(Math.round(top)),
      axisRight: axisRight.toFixed(1), drawMs: (performance.now() - start).toFixed(1),
    });
    if (!ds.firstPaint && f.slices + f.nvtx + f.strips > 0) ds.firstPaint = performance.now().toFixed(1);
  }

  // ---- interaction ----

  bind() {
    const cv = this.canvas;
    cv.addEventListener('wheel', (e) => {
      e.preventDefault();
      if (e.shiftKey) { this.wrap.scrollTop += e.deltaY || e.deltaX; return; }   // shift+wheel scrolls the rows
      const r = cv.getBoundingClientRect();
      if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) this.pan(e.deltaX / this.plotWidth());
      else this.zoom(Math.exp(e.deltaY * 0.0015), e.clientX - r.left);
    }, { passive: false });
    cv.addEventListener('mousedown', (e) => {
      const r = cv.getBoundingClientRect();
      this.drag = { x0: e.clientX, t0: this.view.t0, t1: this.view.t1, moved: false, cx: e.clientX - r.left, cy: e.clientY - r.top };
      cv.classList.add('dragging');
    });
    cv.addEventListener('mousemove', (e) => this.hover(e));
    cv.addEventListener('mouseleave', () => this.hover(null));
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
    this.wrap.addEventListener('scroll', () => { this.draw(); this.refresh(); });
    this.wrap.addEventListener('keydown', (e) => this.key(e));
    window.addEventListener('resize', () => { this.maxH = 0; this.draw(); this.refresh(); });
  }

  // The tooltip of the capture window under the pointer (e null: none).
  hover(e) {
    if (!this.tip) return;
    const r = this.canvas.getBoundingClientRect();
    const t = e && !this.drag ? tipAt(this.tips, e.clientX - r.left, e.clientY - r.top) : null;
    this.tip.hidden = !t;
    this.canvas.dataset.tip = t ? t.text : '';
    if (!t) return;
    this.tip.textContent = t.text;
    this.tip.style.left = `${Math.min(e.clientX + 12, window.innerWidth - this.tip.offsetWidth - 4)}px`;
    this.tip.style.top = `${e.clientY + 14}px`;
  }

  key(e) {
    const k = e.key, page = this.cssHeight - AXIS - 20;
    if (k === 'w' || k === '+' || k === '=') this.zoom(0.7);
    else if (k === 's' || k === '-') this.zoom(1 / 0.7);
    else if (k === 'a' || k === 'ArrowLeft') this.pan(-0.15);
    else if (k === 'd' || k === 'ArrowRight') this.pan(0.15);
    else if (k === '0') this.reset();
    else if (k === 'p' || k === 'P') this.togglePath().catch(this.onError);
    else if (k === 'PageDown') this.wrap.scrollTop += page;
    else if (k === 'PageUp') this.wrap.scrollTop -= page;
    else if (k === 'ArrowDown' || k === 'ArrowUp') this.stepRank(k === 'ArrowDown' ? 1 : -1);
    else if (k === 'Home') this.wrap.scrollTop = 0;
    else if (k === 'End') this.wrap.scrollTop = this.wrap.scrollHeight;
    else return;
    e.preventDefault();
  }

  // Scrolls one rank down (1) or up (-1): the next rank's top to the view's.
  stepRank(dir) {
    const top = this.wrap.scrollTop + AXIS, i = this.rows.indexAt(top), gs = this.rows.groups;
    const g = dir > 0 ? gs[i + 1] : gs[i] && gs[i].y < top ? gs[i] : gs[i - 1];
    if (g) this.wrap.scrollTop = g.y - AXIS;
  }

  async click(x, y) {
    const hit = this.hits.slice().reverse().find((h) => x >= h.x && x <= h.x + Math.max(h.w, 2) && y >= h.y && y <= h.y + h.h);
    if (!hit) { this.clickRow(x, y); return; }
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
      showSlice(this.details, s, inst, this.rows.tracks.get(s.track));
    } catch (e) { this.onError(e); }
  }

  // A click on no slice: a collapsed rank's strip or label expands it, an
  // expanded rank's header band collapses it; anywhere else deselects.
  clickRow(x, y) {
    const cy = y + this.wrap.scrollTop, g = y >= AXIS ? this.rows.groupAt(cy) : null;
    if (g && !this.rows.isExpanded(g)) { this.expand([g.rank], true); return; }
    if (g && cy < g.y + HEAD) { this.expand([g.rank], false); return; }
    this.selected = null;
    this.hl = null;
    this.selectNvtx(null);
    showNothing(this.details);
    this.draw();
  }

  // Highlights a collective instance on every rank (and shows it when
  // asked from a table: the view moves to it, its late rank expanded and
  // scrolled into view).
  async showInstance(row, move = true) {
    const inst = row.pg != null && row.seq != null ? await api.collectiveFind(row.pg, row.seq) : await api.collective(row.id);
    this.setHighlight(inst);
    if (move) {
      const lo = Math.min(...inst.members.map((m) => m.enter_ns)), hi = Math.max(...inst.members.map((m) => m.exit_ns));
      const pad = Math.max(MIN_SPAN, (hi - lo) * 0.4);
      this.setView(lo - pad, hi + pad);
      if (inst.late_rank != null && !this.rankInView(inst.late_rank)) this.goRank(inst.late_rank);
    }
    showSlice(this.details, null, inst);
  }

  setHighlight(inst) {
    this.hl = inst && { ...inst, byTrack: groupBy(inst.members, 'track'), byRank: groupBy(inst.members, 'rank') };
    const ds = this.canvas.dataset;
    ds.highlight = inst ? [...this.hl.byRank.keys()].sort((a, b) => a - b).join(',') : '';
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
    showNvtx(this.details, nv);
  }

  // The critical path of the step that overlaps the view most (off when
  // drawn), with its summary and segments in the details; its ranks are
  // brought into view (expanded when there are few).
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
    if (ranks.length <= EXPAND_PATH_RANKS) this.expand(ranks);
    if (ranks.length && !ranks.some((r) => this.rankInView(r))) this.scrollToRank(ranks[0]);
    if (best.start_ns < t0 || best.end_ns > t1 || best.end_ns - best.start_ns < (t1 - t0) / 2) {
      const pad = (best.end_ns - best.start_ns) * 0.05;
      this.setView(best.start_ns - pad, best.end_ns + pad);
    } else {
      this.draw();
    }
    showPath(this.details, p, (rep.steps || []).find((s) => s.step === p.step));
  }
}

function groupBy(rows, key) {
  const m = new Map();
  for (const r of rows) {
    if (!m.has(r[key])) m.set(r[key], []);
    m.get(r[key]).push(r);
  }
  return m;
}
