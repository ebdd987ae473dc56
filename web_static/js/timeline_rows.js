// The timeline's vertical layout: one group per rank, either collapsed to a
// single summary strip (its activity from /api/heatmap) or expanded to a
// header band, its stitched NVTX row and its tracks. Positions are in
// content pixels (the scrolled space, the time axis at the top); the canvas
// only ever shows the band the wrap has scrolled to, so the layout is the
// one thing that spans every rank and must stay cheap: it is recomputed
// only when a group changes height, and lookups by y are bisections.
export const GUTTER = 190;      // px of labels at the left
export const AXIS = 26;         // px of time axis at the top
export const ROW = 16;          // px per nesting depth of a track
export const HEAD = 20;         // px of an expanded rank's header band
export const GAP = 3;           // px between tracks
const MAX_ROWS = 16;            // deeper slices share the last row
export const NV_ROW = 14;       // px per NVTX nesting depth
export const MEM_ROW = 30;      // px of a rank's GPU memory row (one per GPU with memory counters)
const NV_MAX_ROWS = 4;          // deeper NVTX ranges share the last row
export const STRIP = 14;        // px of a collapsed rank's summary strip
const STRIP_GAP = 1;            // px between summary strips
const EXPAND_ALL_UP_TO = 16;    // more ranks than this start collapsed

// What a track is, for people: a GPU stream is named by its device and
// stream (its track id says neither), a CPU thread by its name or tid.
function trackLabel(t) {
  if (t.kind === 'gpu_stream') {
    return t.pid != null && t.tid != null ? `GPU ${t.pid} · stream ${t.tid}` : `GPU ${t.name || t.id}`;
  }
  return t.name ? `CPU ${t.name}` : `CPU thread ${t.tid ?? t.id}`;
}

export class Rows {
  constructor() {
    this.groups = [];
    this.byRank = new Map();
    this.tracks = new Map();      // track id -> layout
    this.expanded = new Set();
    this.height = AXIS;
    this.dirty = true;
  }

  // The run's ranks (/api/ranks) with their marks: straggler, and how often
  // each rank came late. Depths learnt so far survive a reload (live mode).
  set(ranks, straggler, late) {
    const old = this.byRank;
    this.groups = ranks.map((r) => {
      const was = old.get(r.rank);
      const rows = new Map(was ? was.tracks.map((t) => [t.id, t.rows]) : []);
      return {
        rank: r.rank, host: r.host, straggler: r.rank === straggler, late: late.get(r.rank) || 0,
        nvRows: was ? was.nvRows : 0, memGpus: was ? was.memGpus : [], y: 0, h: 0, nvY: 0, memY: 0,
        tracks: r.tracks.map((t) => ({ id: t.id, kind: t.kind, pid: t.pid, tid: t.tid, name: t.name,
          label: trackLabel(t), rows: rows.get(t.id) || 1, y: 0 })),
      };
    });
    this.byRank = new Map(this.groups.map((g) => [g.rank, g]));
    this.tracks = new Map(this.groups.flatMap((g) => g.tracks.map((t) => [t.id, t])));
    if (this.groups.length <= EXPAND_ALL_UP_TO) {   // new ranks of a small run (live mode) start expanded
      for (const g of this.groups) if (!old.has(g.rank)) this.expanded.add(g.rank);
    }
    this.dirty = true;
  }

  isExpanded(g) { return this.expanded.has(g.rank); }

  // Expands or collapses ranks; true when anything changed.
  setExpanded(ranks, on) {
    let changed = false;
    for (const r of ranks) {
      if (!this.byRank.has(r) || this.expanded.has(r) === on) continue;
      if (on) this.expanded.add(r); else this.expanded.delete(r);
      changed = true;
    }
    this.dirty ||= changed;
    return changed;
  }

  // Memory rows of expanded groups.
  memoryRows() {
    let n = 0;
    for (const r of this.expanded) n += this.byRank.get(r)?.memGpus.length || 0;
    return n;
  }

  // Expanded groups with an NVTX row.
  nvtxGroups() {
    let n = 0;
    for (const r of this.expanded) if (this.byRank.get(r)?.nvRows > 0) n++;
    return n;
  }

  allExpanded() { return this.groups.length > 0 && this.expanded.size === this.groups.length; }

  // Depths seen in a rank's data: rows only grow, so a group keeps its
  // height while the view moves. True when a group grew.
  grow(rank, nvtx, tracks, memory = []) {
    const g = this.byRank.get(rank);
    if (!g) return false;
    let changed = false;
    for (const s of memory) {   // a memory row per GPU that has counters, once seen
      if (!g.memGpus.includes(s.device)) { g.memGpus = [...g.memGpus, s.device].sort((a, b) => a - b); changed = true; }
    }
    let nv = g.nvRows;
    for (const r of nvtx) nv = Math.max(nv, Math.min(NV_MAX_ROWS, r[4] + 1));
    if (nv !== g.nvRows) { g.nvRows = nv; changed = true; }
    for (const d of tracks) {
      const t = this.tracks.get(d.id);
      if (!t) continue;
      let rows = t.rows;
      for (const s of d.slices) rows = Math.max(rows, Math.min(MAX_ROWS, s[3] + 1));
      if (rows !== t.rows) { t.rows = rows; changed = true; }
    }
    this.dirty ||= changed && this.expanded.has(rank);
    return changed;
  }

  layout() {
    if (!this.dirty) return;
    let y = AXIS;
    for (const g of this.groups) {
      g.y = y;
      if (!this.expanded.has(g.rank)) {
        y += STRIP + STRIP_GAP;
      } else {
        y += HEAD;
        g.nvY = y; y += g.nvRows ? g.nvRows * NV_ROW + GAP : 0;
        g.memY = y; y += g.memGpus.length * (MEM_ROW + GAP);
        for (const t of g.tracks) { t.y = y; y += t.rows * ROW + GAP; }
      }
      g.h = y - g.y;
    }
    this.height = y + 8;
    this.dirty = false;
  }

  // Index of the first group that ends below content y.
  indexAt(y) {
    let lo = 0, hi = this.groups.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1, g = this.groups[mid];
      if (g.y + g.h <= y) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // The groups intersecting content band [y0, y1), as [first, end) indices.
  band(y0, y1) {
    const i0 = this.indexAt(y0);
    let i1 = i0;
    while (i1 < this.groups.length && this.groups[i1].y < y1) i1++;
    return [i0, i1];
  }

  groupAt(y) {
    const g = this.groups[this.indexAt(y)];
    return g && g.y <= y ? g : null;
  }
}
