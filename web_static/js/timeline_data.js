// What the timeline draws, fetched only for the ranks in or near view: the
// slices and NVTX ranges of expanded ranks (/api/timeline, at most 16 ranks
// a request, which is all the server takes) and the activity strips of
// collapsed ones (/api/heatmap, one row per rank), and for both the capture
// windows (/api/windows: GPU not recorded, full capture). Answers are kept per
// rank under the key of the view they were asked for; an entry of an older
// view is still drawn until its replacement arrives, so zooming and
// scrolling never blank a row, and answers that come back after the view
// moved on are dropped.
import { api } from './api.js';
import { rankList } from './fmt.js';
import { heatImage, decodeCells } from './heat.js';

const TIMELINE_RANKS = 16;   // per /api/timeline request: the server's limit (QRY_TIMELINE_MAX_RANKS)
const HEAT_ROWS = 4096;      // per /api/heatmap request: the server's limits
const HEAT_COLS = 2048;

export class ViewData {
  constructor() {
    this.detail = new Map();    // rank -> {key, ans, tracks: Map(track id -> track answer), nvtx: [...], windows}
    this.summary = new Map();   // rank -> {key, t0, t1, img, row, windows}
    this.asked = new Set();     // `${key}|${d or s}${rank}` in flight
    this.key = '';
    this.sawWindows = false;    // some answer had capture windows: the legend shows them
  }

  // Asks for what view `key` lacks: details of detailRanks, summaries of
  // summaryRanks; entries of older views outside these lists are let go.
  // Resolves to the detail answers that arrived, one {rank, nvtx, tracks}
  // per rank, or null when nothing was asked.
  async load(key, view, detailRanks, summaryRanks) {
    this.key = key;
    this.prune(this.detail, new Set(detailRanks), () => true);
    this.prune(this.summary, new Set(summaryRanks), (e) => e.key !== key);
    const d = this.missing(this.detail, 'd', detailRanks), s = this.missing(this.summary, 's', summaryRanks);
    const jobs = [];
    for (let i = 0; i < d.length; i += TIMELINE_RANKS) jobs.push(this.loadDetail(key, view, d.slice(i, i + TIMELINE_RANKS)));
    for (let i = 0; i < s.length; i += HEAT_ROWS) jobs.push(this.loadSummary(key, view, s.slice(i, i + HEAT_ROWS)));
    if (!jobs.length) return null;
    return (await Promise.all(jobs)).flat();
  }

  missing(map, kind, ranks) {
    const out = [];
    for (const r of ranks) {
      const e = map.get(r), tag = `${this.key}|${kind}${r}`;
      if ((!e || e.key !== this.key) && !this.asked.has(tag)) { out.push(r); this.asked.add(tag); }
    }
    return out;
  }

  prune(map, keep, stale) {
    for (const [r, e] of map) if (!keep.has(r) && stale(e)) map.delete(r);
  }

  async ask(key, kind, ranks, request) {
    try { return await request(); } finally { for (const r of ranks) this.asked.delete(`${key}|${kind}${r}`); }
  }

  // An /api/windows answer by rank (a rank without windows: none in the map).
  windowsOf(ans) {
    const m = new Map();
    for (const w of ans.windows) {
      if (!m.has(w.rank)) m.set(w.rank, []);
      m.get(w.rank).push(w);
    }
    if (m.size) this.sawWindows = true;
    return m;
  }

  // Slices and NVTX ranges, and beside them the GPU memory counters and the
  // capture windows of the same ranks and view (the memory rows, the bands).
  async loadDetail(key, view, ranks) {
    const params = { ...view, ranks: rankList(ranks) };
    const [ans, mem, win] = await this.ask(key, 'd', ranks,
      () => Promise.all([api.timeline(params), api.counters(params), api.windows(params)]));
    if (key !== this.key) return [];
    const wins = this.windowsOf(win);
    const per = new Map(ranks.map((r) => [r, { key, ans, tracks: new Map(), nvtx: [], memory: [], mem, windows: wins.get(r) }]));
    for (const t of ans.tracks) if (per.has(t.rank)) per.get(t.rank).tracks.set(t.id, t);
    for (const r of ans.nvtx || []) if (per.has(r[0])) per.get(r[0]).nvtx.push(r);
    for (const s of mem.series) if (s.device >= 0 && per.has(s.rank)) per.get(s.rank).memory.push(s);
    for (const [r, e] of per) this.detail.set(r, e);
    return [...per.entries()].map(([rank, e]) => ({ rank, nvtx: e.nvtx, tracks: [...e.tracks.values()], memory: e.memory }));
  }

  async loadSummary(key, view, ranks) {
    const params = { t0: view.t0, t1: view.t1, cols: Math.min(HEAT_COLS, view.px), ranks: rankList(ranks), rows: ranks.length };
    const [ans, win] = await this.ask(key, 's', ranks,
      () => Promise.all([api.heatmap(params), api.windows({ ...view, ranks: params.ranks })]));
    if (key !== this.key) return [];
    const img = heatImage(decodeCells(ans.cells), ans.rows.length, ans.cols), t1 = ans.t0 + ans.cols * ans.col_ns;
    const wins = this.windowsOf(win);
    ans.rows.forEach(([first], row) => this.summary.set(first, { key, t0: ans.t0, t1, img, row, windows: wins.get(first) }));
    return [];
  }
}
