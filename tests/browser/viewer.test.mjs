// Drives the web viewer in headless chromium and checks what a person
// would: the page loads without console errors, the overview names the
// straggler, the timeline draws one group per rank, zooming changes the
// visible range and the request, clicking a collective highlights it on
// every rank, the critical path of a step is drawn with the straggler on
// it, and the SQL console returns rows and shows the error for a write. Screenshots are saved for a person to look at.
// usage: node viewer.test.mjs URL OUTDIR CHROMIUM
import { runTest } from './harness.mjs';

const [url, outDir, exe] = process.argv.slice(2);
await runTest(exe, async (page, check, errors) => {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });

  // Overview: the straggler verdict names rank 2.
  const verdict = await page.textContent('#verdict');
  check(/Straggler: rank 2/.test(verdict), `overview names rank 2 as the straggler ("${verdict.trim().slice(0, 80)}")`);
  check(await page.$eval('#bars-temporal', (e) => e.querySelectorAll('.row').length) === 4, 'temporal bars for 4 ranks');
  // The step breakdown: a bar per step (8), over the 4 ranks, its pieces
  // (phases, world communication, other) filling the bar.
  const steps = await page.$eval('#bars-steps', (e) => ({ rows: e.querySelectorAll('.row').length, ranks: e.dataset.ranks,
    legend: document.getElementById('steps-legend').textContent,
    fill: [...e.querySelectorAll('.row .track')].map((t) => [...t.children].reduce((a, s) => a + parseFloat(s.style.width), 0)) }));
  check(steps.rows === 8 && steps.ranks === '4', `step breakdown: a bar per step over 4 ranks (${steps.rows}, ${steps.ranks})`);
  check(/forward/.test(steps.legend) && /world comm/.test(steps.legend), `step breakdown legend (${steps.legend})`);
  check(steps.fill.every((f) => Math.abs(f - 100) < 0.5), `each step's pieces add up to it (${steps.fill.map((f) => f.toFixed(1))})`);
  await page.screenshot({ path: `${outDir}/overview.png`, fullPage: true });
  check(errors.length === 0, `no console errors on load (${errors.join(' | ')})`);

  // Timeline: one group per rank.
  await page.click('#tabs button[data-tab="timeline"]');
  await page.waitForFunction(() => document.getElementById('tl').dataset.loaded);
  const box0 = await page.$eval('#tl', (c) => { const r = c.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width }; });
  const ds = () => page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  const before = await ds();
  check(before.groups === '4', `timeline draws 4 rank groups (${before.groups})`);
  check(before.straggler === '2', 'timeline marks rank 2 as the straggler');
  check(Number(before.slices) > 0, `timeline drew slices (${before.slices})`);
  await page.screenshot({ path: `${outDir}/timeline.png` });

  // The stitched NVTX row: one per rank group, ranges drawn, and a click on
  // one shows its skew and late rank (the late rank's range is outlined).
  check(before.nvtxGroups === '4', `an NVTX row in each of the 4 rank groups (${before.nvtxGroups})`);
  check(Number(before.nvtx) > 0, `NVTX ranges drawn (${before.nvtx})`);
  const nvHit = await page.evaluate(() => {
    const hits = window.htamerge.timeline.hits.filter((h) => h.nvtx && h.n === 1 && h.w >= 4);
    hits.sort((a, b) => b.w - a.w);
    return hits[0] || null;
  });
  check(nvHit !== null, 'an NVTX range is on screen');
  if (nvHit) {
    await page.mouse.click(box0.x + nvHit.x + Math.min(nvHit.w / 2, 20), box0.y + nvHit.y + nvHit.h / 2);
    await page.waitForFunction((id) => document.getElementById('tl').dataset.nvtxSelected === String(id), nvHit.nvtx,
      { timeout: 10000 });
    const sel = await ds();
    const nvDetails = await page.textContent('#details');
    check(/skew/.test(nvDetails) && /stitched NVTX range/.test(nvDetails), 'NVTX details show the skew');
    check(nvHit.late < 0 ? sel.nvtxLateRank === '' : sel.nvtxLateRank === String(nvHit.late) && /late rank/.test(nvDetails),
      `NVTX details name the late rank (${sel.nvtxLateRank}, drawn ${nvHit.late})`);
    const rows = await page.$$eval('#details table:last-of-type tr', (r) => r.length - 1);
    check(rows === 4, `the NVTX range on every rank in the details (${rows})`);
    await page.screenshot({ path: `${outDir}/timeline-nvtx.png` });
    await page.mouse.click(box0.x + box0.w - 5, box0.y + 5);   // deselect
  }

  // Zoom with the wheel over the plot, then with keys.
  const box = box0;
  await page.mouse.move(box.x + 190 + (box.w - 190) * 0.3, box.y + 80);
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -300);
  await page.keyboard.press('w');
  await page.waitForFunction((req) => { const d = document.getElementById('tl').dataset; return d.request !== req && d.loaded; },
    before.request, { timeout: 10000 });
  await page.waitForTimeout(400);
  const after = await ds();
  const spanB = Number(before.t1) - Number(before.t0), spanA = Number(after.t1) - Number(after.t0);
  check(spanA < spanB / 3, `zoom narrows the visible range (${spanB} -> ${spanA} ns)`);
  check(after.request !== before.request, `zoom changes the request (${after.request})`);
  await page.screenshot({ path: `${outDir}/timeline-zoomed.png` });

  // Click a collective slice: the instance is highlighted on every rank.
  await page.keyboard.press('0');
  await page.waitForTimeout(500);
  const target = await page.evaluate(() => {
    const hits = window.htamerge.timeline.hits.filter((h) => h.coll > 0 && h.w >= 3);
    hits.sort((a, b) => b.w - a.w);
    return hits[0] || null;
  });
  check(target !== null, 'a collective slice is on screen');
  if (target) {
    await page.mouse.click(box.x + target.x + Math.min(target.w / 2, 20), box.y + target.y + target.h / 2);
    await page.waitForFunction(() => document.getElementById('tl').dataset.highlight, null, { timeout: 10000 });
    const hl = await ds();
    check(hl.highlight === '0,1,2,3', `collective highlighted on all ranks (${hl.highlight})`);
    check(hl.lateRank === '2', `late rank shown is 2 (${hl.lateRank})`);
    const details = await page.textContent('#details');
    check(/late rank/.test(details) && /skew/.test(details), 'details show skew and late rank');
    await page.screenshot({ path: `${outDir}/timeline-collective.png` });
  }

  // The critical path of the step in view: drawn in the rank bands, the
  // straggler's work on it, its summary in the details.
  await page.keyboard.press('0');
  await page.waitForTimeout(300);
  await page.click('#tl-path');
  await page.waitForFunction(() => document.getElementById('tl').dataset.path, null, { timeout: 10000 });
  const path = await ds();
  check(Number(path.path) > 0, `critical path drawn (${path.path} segments, step ${path.pathStep})`);
  check(path.pathRanks.split(',').includes('2'), `the straggler's work is on the path (ranks ${path.pathRanks})`);
  const pathDetails = await page.textContent('#details');
  check(/critical path/.test(pathDetails) && /rank 2/.test(pathDetails), 'details give the path\'s summary');
  check(Number(path.t1) - Number(path.t0) < spanB / 2, 'the timeline shows the step of the path');
  await page.screenshot({ path: `${outDir}/timeline-path.png` });
  await page.click('#tl-path');   // off again
  await page.waitForFunction(() => !document.getElementById('tl').dataset.path, null, { timeout: 10000 });

  // Tables.
  await page.click('#tabs button[data-tab="tables"]');
  check(await page.$$eval('#t-stragglers tr.straggler', (r) => r.length) === 1, 'stragglers table marks one rank');
  check(await page.$$eval('#t-collectives tbody tr', (r) => r.length) >= 8, 'collectives table has instances');
  await page.screenshot({ path: `${outDir}/tables.png`, fullPage: true });
  // A collectives row opens the timeline on that instance, highlighted.
  await page.evaluate(() => { document.getElementById('tl').dataset.highlight = ''; });
  await page.click('#t-collectives tbody tr:nth-child(3)');
  await page.waitForFunction(() => document.getElementById('tl').dataset.highlight, null, { timeout: 10000 });
  const row = await ds();
  check(row.highlight === '0,1,2,3' && row.lateRank === '2', `a collectives row highlights its instance (${row.highlight}, late ${row.lateRank})`);
  check(Number(row.t1) - Number(row.t0) < spanB / 5, 'the timeline moved to the instance');
  await page.screenshot({ path: `${outDir}/timeline-from-table.png` });
  await page.click('#tabs button[data-tab="tables"]');

  // SQL console: rows for a read, the error for a write.
  await page.click('#tabs button[data-tab="sql"]');
  await page.fill('#sql-text', 'SELECT rank, late_count FROM v_stragglers ORDER BY rank');
  await page.click('#sql-run');
  await page.waitForFunction(() => document.querySelectorAll('#sql-result tbody tr').length > 0);
  check(await page.$$eval('#sql-result tbody tr', (r) => r.length) === 4, 'SQL console returns 4 rows');
  await page.fill('#sql-text', 'DELETE FROM slices');
  await page.click('#sql-run');
  await page.waitForSelector('#sql-error:not([hidden])');
  const err = await page.textContent('#sql-error');
  check(/refused/.test(err), `SQL console shows the refusal of a write ("${err}")`);
  await page.screenshot({ path: `${outDir}/sql.png` });
});
