// The details panel beside the timeline: a slice, a collective instance
// across ranks, a stitched NVTX range, or a step's critical path.
import { dur, el, clear } from './fmt.js';

export function showNothing(box) { clear(box).append(el('p', { class: 'muted', text: 'Click a slice.' })); }

// track: the slice's track layout (its label says what it is), if known.
export function showSlice(box, s, inst, track) {
  clear(box);
  if (s) {
    box.append(el('h3', { text: s.name || '(unnamed)' }));
    const where = track ? track.label : `${s.kind === 'gpu_stream' ? 'GPU' : 'CPU'} ${s.track_name || s.track}`;
    const rows = [['rank', s.rank], ['track', where],
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

export function showNvtx(box, nv) {
  clear(box);
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

// p: /api/path/{step}; info: that step's row of the critical-path report.
export function showPath(box, p, info) {
  clear(box);
  box.append(el('h3', { text: `critical path · step ${p.step}` }));
  if (info) box.append(el('p', {}, el('b', { text: dur(info.path_ms * 1e6) }), ` across ${info.ranks} rank(s): ${info.summary}`));
  const t = el('table', { class: 'path-table' });
  t.append(el('tr', {}, ...['rank', 'kind', 'what', 'time', 'GPU'].map((h) => el('td', { text: h }))));
  for (const s of p.segments) {
    const what = s.kind === 'comm' ? `${s.name} on ${s.dim || s.pg || '?'}` : s.name;
    t.append(el('tr', { class: s.kind === 'comm' ? 'path-comm' : 'path-work' }, el('td', { text: String(s.rank) }),
      el('td', { text: s.kind }), el('td', { text: what }), el('td', { text: dur(s.end_ns - s.start_ns) }),
      el('td', { text: s.kind === 'work' ? dur(s.compute_ns) : '' })));
  }
  box.append(t);
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
