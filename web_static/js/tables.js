// Sortable tables: click a header to sort by it, again to reverse.
import { el, clear, num } from './fmt.js';

// columns: [{key, label, text?: bool, fmt?: fn}]; opts.rowClass(row), opts.onRow(row)
export function sortableTable(container, rows, columns, opts = {}) {
  const state = { key: opts.sortKey || null, dir: opts.sortDir || 1 };
  const table = el('table', { class: 'data' });
  const thead = el('thead'), tbody = el('tbody');
  table.append(thead, tbody);

  function renderBody() {
    const sorted = rows.slice();
    if (state.key) {
      sorted.sort((a, b) => {
        const x = a[state.key], y = b[state.key];
        if (x == null && y == null) return 0;
        if (x == null) return 1;
        if (y == null) return -1;
        return (x < y ? -1 : x > y ? 1 : 0) * state.dir;
      });
    }
    clear(tbody);
    for (const r of sorted) {
      const tr = el('tr', { class: opts.rowClass ? opts.rowClass(r) : '' });
      if (opts.onRow) { tr.classList.add('clickable'); tr.addEventListener('click', () => opts.onRow(r)); }
      for (const c of columns) {
        const v = r[c.key];
        tr.append(el('td', { class: c.text ? 'text' : '', text: c.fmt ? c.fmt(v, r) : num(v) }));
      }
      tbody.append(tr);
    }
    for (const th of thead.querySelectorAll('th')) {
      th.classList.toggle('sorted-asc', th.dataset.key === state.key && state.dir > 0);
      th.classList.toggle('sorted-desc', th.dataset.key === state.key && state.dir < 0);
    }
  }

  const tr = el('tr');
  for (const c of columns) {
    tr.append(el('th', {
      class: c.text ? 'text' : '', text: c.label || c.key, dataset: { key: c.key },
      onclick: () => { state.dir = state.key === c.key ? -state.dir : (c.text ? 1 : -1); state.key = c.key; renderBody(); },
    }));
  }
  thead.append(tr);
  renderBody();
  clear(container).append(el('div', { class: 'scroll' }, table));
  return table;
}

// Columns for whatever keys the rows have (SQL results, unknown reports).
export function autoColumns(rows) {
  return rows.length ? Object.keys(rows[0]).map((k) => ({ key: k, text: typeof rows[0][k] === 'string' })) : [];
}
