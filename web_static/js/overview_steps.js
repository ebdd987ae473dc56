// The step breakdown by phase and parallelism dimension: one bar per step,
// the mean over the ranks the steps report lists (every rank up to 64; past
// that the median, slowest and straggler ranks it names), split into the
// CPU's forward, backward and optimizer time, the communication that no
// phase hid, cut by the dimension of its process group (dp, tp, ...: report
// comms), and the rest; the pieces add up to the step.
import { el, clear, num } from './fmt.js';

const PHASES = [['forward_ms', 'forward', '#3b78d8'], ['backward_ms', 'backward', '#7e57c2'],
  ['optimizer_ms', 'optimizer', '#26a69a']];
const DIM_COLORS = { dp: '#ef6c00', fsdp: '#f4511e', tp: '#c62828', pp: '#ad1457', ep: '#6d4c41', cp: '#8d6e63',
  world: '#fb8c00' };
const OTHER = '#b0bec5';

function dimColor(dim) { return DIM_COLORS[dim] || '#ffa726'; }

// {step -> {n, step_ms, ph, dims: Map(dim -> ms)}}: sums over the rows' ranks.
function perStep(rep) {
  const steps = new Map();
  for (const b of rep.breakdown || []) {
    const s = steps.get(b.step) || { n: 0, step_ms: 0, ph: PHASES.map(() => 0), dims: new Map() };
    s.n++; s.step_ms += b.step_ms;
    PHASES.forEach(([k], i) => { s.ph[i] += b[k] || 0; });
    steps.set(b.step, s);
  }
  for (const c of rep.comm_by_pg || []) {
    const s = steps.get(c.step);
    if (s) s.dims.set(c.dim || c.pg, (s.dims.get(c.dim || c.pg) || 0) + (c.exposed_ms || 0));
  }
  return steps;
}

export function renderSteps(rep, box, legend) {
  clear(box); clear(legend);
  const steps = rep ? perStep(rep) : new Map();
  if (!steps.size) { box.append(el('p', { class: 'muted', text: 'No step breakdown (no steps).' })); return; }
  const dims = [...new Set([...steps.values()].flatMap((s) => [...s.dims.keys()]))].sort();
  for (const [label, color] of [...PHASES.map(([, l, c]) => [l, c]), ...dims.map((d) => [`${d} comm`, dimColor(d)]), ['other', OTHER]]) {
    const i = el('i'); i.style.background = color;
    legend.append(i, label, ' ');
  }
  const max = Math.max(...[...steps.values()].map((s) => s.step_ms / s.n));
  for (const [step, s] of [...steps.entries()].sort((a, b) => a[0] - b[0])) {
    const mean = (v) => v / s.n, total = mean(s.step_ms);
    const segs = PHASES.map(([, l, c], i) => ({ v: mean(s.ph[i]), l, c }));
    for (const d of dims) segs.push({ v: mean(s.dims.get(d) || 0), l: `${d} comm`, c: dimColor(d) });
    // What no phase covers, and exposed time that no group accounts for.
    segs.push({ v: Math.max(0, total - segs.reduce((a, g) => a + g.v, 0)), l: 'other', c: OTHER });
    const track = el('div', { class: 'track' });
    track.style.width = `${(100 * total) / max}%`;
    for (const g of segs) {
      if (g.v <= 0) continue;
      const seg = el('div', { class: 'seg', title: `${g.l} ${num(g.v, 2)} ms (${num((100 * g.v) / total, 1)}%)` });
      seg.style.width = `${(100 * g.v) / total}%`;
      seg.style.background = g.c;
      track.append(seg);
    }
    box.append(el('div', { class: 'row', 'data-step': String(step) }, el('span', { class: 'label', text: `step ${step}` }),
      el('div', {}, track), el('span', { class: 'val', text: `${num(total, 1)} ms` })));
  }
  const n = Math.max(...[...steps.values()].map((s) => s.n));
  box.dataset.ranks = String(n);
}
