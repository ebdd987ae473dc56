// The overview: run facts, the straggler verdict with its evidence, and one
// bar per rank for the temporal breakdown, overlap and idle time. Past
// BARS_MAX ranks a card shows the ranks that stand out most by its measure
// (the straggler always), in rank order: the heat map above shows them all,
// and a thousand bars would take seconds to lay out and nobody reads them.
import { el, clear, num, us } from './fmt.js';
import { renderSteps } from './overview_steps.js';

const BARS_MAX = 64;

const FACTS = [
  ['file', 'file'], ['run_status', 'status'], ['rank_count', 'ranks'], ['world_size', 'world size'],
  ['slices', 'slices'], ['collectives', 'collectives'], ['span_ns', 'span'], ['created_by', 'created by'],
  ['created_at', 'created at'], ['definitions', 'definitions'], ['incomplete_ranks', 'incomplete ranks'],
  ['failed_programs', 'failed programs'], ['skipped_events', 'skipped events'],
];

function renderFacts(run) {
  const t = clear(document.getElementById('facts'));
  for (const [key, label] of FACTS) {
    if (run[key] == null || run[key] === '') continue;
    const v = key === 'span_ns' ? us(run[key] / 1000) : typeof run[key] === 'number' ? num(run[key]) : run[key];
    t.append(el('tr', {}, el('td', { text: label }), el('td', { text: v })));
  }
}

function renderVerdict(s) {
  const box = clear(document.getElementById('verdict'));
  const is = s && s.straggler != null;
  box.classList.toggle('straggler', is);
  box.dataset.straggler = is ? String(s.straggler) : '';
  if (!s) {
    box.append(el('div', { class: 'big', text: 'Straggler: not known' }),
      el('div', { class: 'muted', text: 'This file has no straggler analysis.' }));
    return;
  }
  box.append(el('div', { class: 'big', text: is ? `Straggler: rank ${s.straggler}` : 'No clear straggler' }),
    el('div', { text: s.evidence || '' }));
}

// One labelled bar made of segments [{value, cls, title}] scaled to total.
function bar(label, segs, total, text, straggler) {
  const track = el('div', { class: 'track' });
  for (const s of segs) {
    const w = total > 0 ? Math.max(0, Math.min(100, (100 * s.value) / total)) : 0;
    const seg = el('div', { class: `seg ${s.cls}`, title: s.title });
    seg.style.width = `${w}%`;
    track.append(seg);
  }
  return el('div', { class: `row${straggler ? ' straggler' : ''}` },
    el('span', { class: 'label', text: label + (straggler ? ' !' : '') }), track, el('span', { class: 'val', text }));
}

// rows (with .rank) to draw: all, or the BARS_MAX of highest score(row)
// and the straggler, with a note saying so in box.
function standOut(box, rows, score, what, straggler) {
  if (rows.length <= BARS_MAX) return rows;
  const top = rows.slice().sort((a, b) => score(b) - score(a)).slice(0, BARS_MAX);
  const s = rows.find((r) => r.rank === straggler);
  if (s && !top.includes(s)) top[top.length - 1] = s;
  box.append(el('p', { class: 'muted', text: `${BARS_MAX} of ${num(rows.length)} ranks: ${what} (every rank: Tables)` }));
  return top.sort((a, b) => a.rank - b.rank);
}

function renderTemporal(rep, straggler) {
  const box = clear(document.getElementById('bars-temporal'));
  for (const r of standOut(box, (rep && rep.ranks) || [], (r) => r.idle_pct, 'the most idle', straggler)) {
    const segs = [
      { value: r.compute_pct, cls: 'c-compute', title: `compute ${num(r.compute_pct)}%` },
      { value: r.non_compute_pct, cls: 'c-noncompute', title: `non-compute ${num(r.non_compute_pct)}%` },
      { value: r.idle_pct, cls: 'c-idle', title: `idle ${num(r.idle_pct)}%` },
    ];
    box.append(bar(`rank ${r.rank}`, segs, 100, `${num(r.idle_pct, 1)}% idle`, r.rank === straggler));
  }
  if (!box.firstChild) box.append(el('p', { class: 'muted', text: 'No GPU activity.' }));
}

function renderOverlap(rep, straggler) {
  const box = clear(document.getElementById('bars-overlap'));
  for (const r of standOut(box, (rep && rep.ranks) || [], (r) => -(r.overlap_pct ?? 100), 'the least overlap', straggler)) {
    const p = r.overlap_pct;
    box.append(bar(`rank ${r.rank}`, [{ value: p || 0, cls: 'c-overlap', title: `${num(p)}% of ${us(r.comm_us)}` }],
      100, p == null ? 'no comm' : `${num(p, 1)}%`, r.rank === straggler));
  }
  if (!box.firstChild) box.append(el('p', { class: 'muted', text: 'No communication kernels.' }));
}

function renderIdle(rep, straggler) {
  const box = clear(document.getElementById('bars-idle'));
  const per = new Map();
  for (const s of (rep && rep.streams) || []) {
    const t = per.get(s.rank) || { host: 0, kernel: 0, other: 0 };
    t.host += s.host_wait_us; t.kernel += s.kernel_wait_us; t.other += s.other_us;
    per.set(s.rank, t);
  }
  const rows = [...per.entries()].map(([rank, t]) => ({ rank, t, total: t.host + t.kernel + t.other })).sort((a, b) => a.rank - b.rank);
  const max = Math.max(1, ...rows.map((r) => r.total));
  for (const { rank, t } of standOut(box, rows, (r) => r.total, 'the most idle time', straggler)) {
    const segs = [
      { value: t.host, cls: 'c-host', title: `host wait ${us(t.host)}` },
      { value: t.kernel, cls: 'c-kernel', title: `kernel wait ${us(t.kernel)}` },
      { value: t.other, cls: 'c-other', title: `other ${us(t.other)}` },
    ];
    box.append(bar(`rank ${rank}`, segs, max, us(t.host + t.kernel + t.other), rank === straggler));
  }
  if (!box.firstChild) box.append(el('p', { class: 'muted', text: 'No idle time recorded.' }));
}

export function renderOverview(d) {
  const straggler = d.stragglers ? d.stragglers.straggler : null;
  renderFacts(d.run);
  renderVerdict(d.stragglers);
  renderTemporal(d.temporal, straggler);
  renderOverlap(d.overlap, straggler);
  renderIdle(d.idle, straggler);
  renderSteps(d.steps, document.getElementById('bars-steps'), document.getElementById('steps-legend'));
}
