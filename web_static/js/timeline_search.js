// The timeline's search box. What a person types is read here first:
// "rank 517" or "517" opens a rank, "step 5" shows a step, "0:12" (pg:seq)
// or "allreduce 12" highlights a collective; anything else goes to
// /api/search (NVTX ranges, slices... by name). The hits show in a small
// list under the box; Enter takes the first.
import { api } from './api.js';
import { el, clear } from './fmt.js';

const DEBOUNCE_MS = 200;

export class Search {
  // timeline: the Timeline; collectives: () => rows of the collectives
  // report (to find the process group of "allreduce 12").
  constructor({ input, list, timeline, collectives, onError }) {
    Object.assign(this, { input, list, timeline, collectives, onError });
    this.seq = 0;
    this.pending = null;   // {text, hits: promise} of the last lookup
    this.timer = 0;
    input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.lookup(), DEBOUNCE_MS);
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); clearTimeout(this.timer); this.pickFirst(); }
      else if (e.key === 'Escape') { this.list.hidden = true; }
    });
    input.addEventListener('blur', () => setTimeout(() => { this.list.hidden = true; }, 200));
  }

  // The hits of the text in the box, asked once per text.
  lookup() {
    const text = this.input.value.trim();
    if (this.pending && this.pending.text === text) return this.pending.hits;
    const seq = ++this.seq;
    this.pending = { text, hits: this.hits(text) };
    this.pending.hits.then((hits) => { if (seq === this.seq) this.render(hits); }, this.onError);
    return this.pending.hits;
  }

  async pickFirst() {
    const hits = await this.lookup();
    if (hits.length) await this.pick(hits[0]);
  }

  // The hits for text: read here when it has a known form, else the server's.
  async hits(text) {
    if (!text) return [];
    let m;
    if ((m = /^(?:rank\s*)?(\d+)$/i.exec(text)) && this.timeline.rows.byRank.has(Number(m[1]))) {
      return [{ kind: 'rank', label: `rank ${m[1]}`, rank: Number(m[1]) }];
    }
    if ((m = /^step\s*(\d+)$/i.exec(text))) return [{ kind: 'step', label: `step ${m[1]}`, step: Number(m[1]) }];
    if ((m = /^([^\s:]+):(\d+)$/.exec(text))) return [{ kind: 'collective', label: `pg ${m[1]} · seq ${m[2]}`, pg: m[1], seq: Number(m[2]) }];
    if ((m = /^([a-z_]+)\s+(\d+)$/i.exec(text))) {
      const op = m[1].toLowerCase().replace(/_/g, '');
      const pgs = new Set(this.collectives().filter((r) => String(r.op).toLowerCase().replace(/_/g, '') === op).map((r) => r.pg));
      if (pgs.size) return [...pgs].map((pg) => ({ kind: 'collective', label: `${m[1]} · pg ${pg} · seq ${m[2]}`, pg, seq: Number(m[2]) }));
    }
    try {
      return (await api.search(text)).hits || [];
    } catch (e) {
      if (e.status === 404) return [];   // a server without /api/search: nothing found
      throw e;
    }
  }

  render(hits) {
    const list = clear(this.list);
    if (!this.input.value.trim()) { list.hidden = true; return; }
    if (!hits.length) list.append(el('li', { class: 'muted', text: 'no match' }));
    for (const h of hits) {
      list.append(el('li', { onmousedown: (e) => { e.preventDefault(); this.pick(h); } },
        el('span', { class: 'kind', text: h.kind }), h.label));
    }
    list.hidden = false;
  }

  async pick(h) {
    this.list.hidden = true;
    const tl = this.timeline;
    try {
      if (h.kind === 'rank') tl.goRank(h.rank);
      else if (h.kind === 'step' && h.step != null) await tl.showStep(h.step);
      else if (h.kind === 'collective' && (h.id != null || h.pg != null)) await tl.showInstance(h.id != null ? { id: h.id } : h);
      else tl.focus(h.rank, h.t0, h.t1);
      if (h.kind === 'nvtx' && h.id != null) tl.selectNvtx(await api.nvtx(h.id));
      tl.wrap.focus();
    } catch (e) { this.onError(e); }
  }
}
