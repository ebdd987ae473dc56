// The htamerge web viewer: tabs, loading, live mode. Everything comes from
// the JSON API of `htamerge serve`; there is no build step.
import { api, ApiError } from './api.js';
import { el, num, us, dur } from './fmt.js';
import { renderOverview } from './overview.js';
import { Timeline } from './timeline.js';
import { Search } from './timeline_search.js';
import { HeatMap } from './overview_heatmap.js';
import { sortableTable, autoColumns } from './tables.js';
import { setupSql } from './sql.js';

const LIVE_POLL_MS = 2000;
const DRILL_COLUMNS = 3;   // a heat map click shows this many of its columns either side
const state = { run: null, straggler: null, version: null, watched: false, serverStopped: false,
                topics: null, docs: null, tablesFor: null };
const views = {};   // the timeline and the heat map, once made
// The report topics this page draws in its own way; every topic the server
// lists (/api/topics) can also be shown as it is under "Report". It asks for
// every rank's rows (all_ranks): past 64 ranks the server would list only
// those that stand out, and the bars and sortable tables pick their own.
const DRAWN = ['stragglers', 'temporal', 'overlap', 'idle', 'collectives'];

function showError(e) {
  const b = document.getElementById('banner');
  if (state.serverStopped && !(e instanceof ApiError)) {
    b.textContent = 'The server has stopped: what is shown stays; to look further, `htamerge serve FILE`.';
  } else {
    b.textContent = e.status === 401 ? 'This server needs a token: open the page as /?token=TOKEN.' : `Error: ${e.message}`;
  }
  b.hidden = false;
}

// Report topics that a file may lack answer 404; the page then does without.
async function optional(p) {
  try { return await p; } catch (e) { if (e.status === 404) return null; throw e; }
}

function setupTabs() {
  for (const b of document.querySelectorAll('#tabs button')) {
    b.addEventListener('click', () => showTab(b.dataset.tab));
  }
}

function showTab(name) {
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('active', b.dataset.tab === name);
  for (const s of document.querySelectorAll('.tab')) s.classList.toggle('active', s.id === `tab-${name}`);
  if (name === 'timeline') { views.timeline.draw(); views.timeline.refresh(); document.getElementById('tl-wrap').focus(); }
  if (name === 'overview') views.heat.show();
  if (name === 'tables') renderTables();
}

// The straggler and the ranks that came late (rank -> times late), from the
// stragglers report; both views mark them.
function marksOf(stragglers) {
  const late = new Map();
  for (const r of (stragglers && stragglers.ranks) || []) if (r.late_count > 0) late.set(r.rank, r.late_count);
  return { straggler: stragglers ? stragglers.straggler : null, late };
}

function renderStatus(run) {
  document.getElementById('file').textContent = run.file;
  const s = document.getElementById('status');
  s.textContent = run.live ? 'live: run in progress' : run.run_status || 'file';
  s.className = `badge${run.live ? ' live' : /incomplete|fail/.test(run.run_status || '') ? ' bad' : ''}`;
}

// The tables, built when their tab is first shown after a load: at a
// thousand ranks they are thousands of rows the page need not wait for.
function renderTables() {
  const d = state.docs;
  if (!d || state.tablesFor === d || !document.getElementById('tab-tables').classList.contains('active')) return;
  state.tablesFor = d;
  const straggler = d.stragglers ? d.stragglers.straggler : null;
  const mark = (r) => (r.rank === straggler ? 'straggler' : '');
  sortableTable(document.getElementById('t-stragglers'), (d.stragglers && d.stragglers.ranks) || [], [
    { key: 'rank' }, { key: 'late_count', label: 'late' }, { key: 'instances' },
    { key: 'late_fraction', label: 'late share', fmt: (v) => (v == null ? '' : `${num(100 * v, 0)}%`) },
    { key: 'blame_us', label: 'blame', fmt: us }], { rowClass: mark, sortKey: 'blame_us', sortDir: -1 });
  sortableTable(document.getElementById('t-overlap'), (d.overlap && d.overlap.ranks) || [], [
    { key: 'rank' }, { key: 'comm_us', label: 'communication', fmt: us }, { key: 'overlap_us', label: 'overlapped', fmt: us },
    { key: 'overlap_pct', label: 'overlap %' }], { rowClass: mark });
  sortableTable(document.getElementById('t-collectives'), (d.collectives && d.collectives.instances) || [], [
    { key: 'pg', text: true }, { key: 'op', text: true }, { key: 'seq' }, { key: 'ranks' },
    { key: 'skew_us', label: 'skew', fmt: us }, { key: 'late_rank', label: 'late rank' }, { key: 'span_us', label: 'span', fmt: us }],
  { rowClass: (r) => (r.late_rank === straggler && straggler != null ? 'straggler' : ''),
    onRow: (r) => { showTab('timeline'); views.timeline.showInstance(r).catch(showError); } });
  sortableTable(document.getElementById('t-idle'), (d.idle && d.idle.streams) || [], [
    { key: 'rank' }, { key: 'stream' }, { key: 'host_wait_us', label: 'host wait', fmt: us },
    { key: 'kernel_wait_us', label: 'kernel wait', fmt: us }, { key: 'other_us', label: 'other', fmt: us },
    { key: 'host_wait_ratio', label: 'host wait share' }], { rowClass: mark, sortKey: 'host_wait_us', sortDir: -1 });
}

// A report document as it is: its scalars (an object's as "key.member",
// e.g. rank_summary.note), then a table per array.
function renderReport(doc) {
  const box = document.getElementById('t-report');
  while (box.firstChild) box.removeChild(box.firstChild);
  const facts = Object.entries(doc).filter(([, v]) => !Array.isArray(v)).flatMap(([k, v]) =>
    (v && typeof v === 'object' ? Object.entries(v).map(([m, x]) => [`${k}.${m}`, x]) : [[k, v]]));
  if (facts.length) {
    box.append(el('table', { class: 'facts' }, ...facts.map(([k, v]) =>
      el('tr', {}, el('td', { text: k }), el('td', { text: v == null ? '' : String(v) })))));
  }
  for (const [k, rows] of Object.entries(doc).filter(([, v]) => Array.isArray(v))) {
    const t = el('div');
    box.append(el('h3', { text: k }), t);
    sortableTable(t, rows, autoColumns(rows));
  }
}

async function showReport() {
  const name = document.getElementById('report-topic').value;
  const topic = state.topics.find((t) => t.name === name);
  document.getElementById('report-help').textContent = topic ? topic.help : '';
  if (topic) renderReport(await api.report(name));
}

// The topic picker, filled once from the server's list.
function setupReports(topics) {
  const sel = document.getElementById('report-topic');
  if (state.topics) return;
  state.topics = topics;
  for (const t of topics) sel.append(el('option', { value: t.name, text: t.name }));
  sel.addEventListener('change', () => showReport().catch(showError));
  showReport().catch(showError);
}

async function loadAll() {
  const [run, ranks, topics] = await Promise.all([api.run(), api.ranks(), api.topics()]);
  const offered = new Set(topics.topics.map((t) => t.name));
  const docs = await Promise.all(DRAWN.map((t) => (offered.has(t) ? optional(api.report(t, { all_ranks: 1 })) : null)));
  const d = { run, steps: offered.has('steps') ? await optional(api.report('steps')) : null };
  DRAWN.forEach((t, i) => { d[t] = docs[i]; });
  state.run = run;
  state.version = run.version;
  state.straggler = d.stragglers ? d.stragglers.straggler : null;
  const marks = marksOf(d.stragglers);
  renderStatus(run);
  renderOverview(d);
  views.heat.load(ranks.ranks.map((r) => r.rank), marks).catch(showError);
  state.docs = d;
  renderTables();
  views.timeline.setRun(run, ranks, marks);
  setupReports(topics.topics);
  document.body.dataset.ready = '1';
}

// `htamerge --serve` stopped (--serve-linger ran out, Ctrl-C): the page
// keeps everything it shows and says so, instead of an error per poll.
function serverStopped() {
  const run = state.run, s = document.getElementById('status');
  state.serverStopped = true;
  s.textContent = run.live ? 'server stopped while the run was live' : `run ${run.run_status || 'finished'}; server stopped`;
  s.className = `badge stopped${run.live || /incomplete|fail/.test(run.run_status || '') ? ' bad' : ''}`;
}

// While the run is in progress, poll /api/run and reload when it changed.
// A page that saw the run live goes on polling once it completed, to notice
// when the server stops; a page opened on a finished file never polls.
function startLive() {
  const timer = setInterval(async () => {
    if (!state.run || !(state.run.live || state.watched)) return;
    state.watched = true;
    try {
      const run = await api.run();
      if (run.version !== state.version) { await loadAll(); views.timeline.grow(run); }
      else renderStatus(run);
      state.run = run;
    } catch (e) {
      if (e instanceof ApiError) { showError(e); return; }
      clearInterval(timer);   // no answer at all: the server is gone
      serverStopped();
    }
  }, LIVE_POLL_MS);
}

async function main() {
  const $ = (id) => document.getElementById(id);
  const timeline = views.timeline = new Timeline({
    canvas: $('tl'), spacer: $('tl-spacer'), wrap: $('tl-wrap'), details: $('details'), range: $('tl-range'),
    expandButton: $('tl-expand'), legend: $('tl-legend'), tip: $('tl-tip'), onError: showError,
  });
  views.heat = new HeatMap({
    canvas: $('heat'), tip: $('heat-tip'), legend: $('heat-legend'), onError: showError,
    onPick: (cell) => {   // the timeline at that rank and time
      showTab('timeline');
      timeline.focus(cell.rank, cell.t - DRILL_COLUMNS * cell.colNs, cell.t + DRILL_COLUMNS * cell.colNs);
    },
  });
  new Search({ input: $('tl-search'), list: $('tl-hits'), timeline, onError: showError,
    collectives: () => (state.docs && state.docs.collectives && state.docs.collectives.instances) || [] });
  // Toolbar buttons hand the keys back to the timeline.
  const button = (id, act) => $(id).addEventListener('click', () => { act(); $('tl-wrap').focus(); });
  button('tl-in', () => timeline.zoom(0.5));
  button('tl-out', () => timeline.zoom(2));
  button('tl-reset', () => timeline.reset());
  button('tl-path', () => timeline.togglePath().catch(showError));
  button('tl-expand', () => timeline.toggleAll());
  window.addEventListener('resize', () => views.heat.draw());
  setupTabs();
  setupSql();
  try { await loadAll(); } catch (e) { showError(e); }
  startLive();
  window.htamerge = { timeline, heat: views.heat, state, dur, el };   // for tests and the console
}

main();
