// The SQL console: one read-only statement at a time (POST /api/sql); the
// server refuses writes and says why, shown in the error box.
import { api } from './api.js';
import { el, clear } from './fmt.js';
import { sortableTable } from './tables.js';

const VIEWS = ['v_stragglers', 'v_temporal', 'v_overlap', 'v_idle', 'v_kernels', 'v_kernel_labels',
  'v_kernel_class', 'v_collectives', 'v_steps', 'v_clocks', 'v_slices', 'ranks', 'tracks', 'collectives'];

export function setupSql() {
  const text = document.getElementById('sql-text');
  const chips = document.getElementById('sql-views');
  for (const v of VIEWS) {
    chips.append(el('button', { text: v, title: `SELECT * FROM ${v}`, onclick: () => { text.value = `SELECT * FROM ${v} LIMIT 200`; run(); } }));
  }
  document.getElementById('sql-run').addEventListener('click', run);
  text.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } });
}

async function run() {
  const text = document.getElementById('sql-text').value;
  const err = document.getElementById('sql-error'), info = document.getElementById('sql-info');
  const out = clear(document.getElementById('sql-result'));
  err.hidden = true;
  info.textContent = 'running…';
  const t = performance.now();
  try {
    const res = await api.sql(text);
    const rows = res.rows.map((r) => Object.fromEntries(res.columns.map((c, i) => [c, r[i]])));
    const cols = res.columns.map((c, i) => ({ key: c, label: c, text: res.rows.length > 0 && typeof res.rows[0][i] === 'string' }));
    sortableTable(out, rows, cols);
    info.textContent = `${rows.length} row${rows.length === 1 ? '' : 's'}${res.truncated ? ' (cut at the row limit)' : ''} in ${Math.round(performance.now() - t)} ms`;
  } catch (e) {
    info.textContent = '';
    err.textContent = e.message;
    err.hidden = false;
  }
}
