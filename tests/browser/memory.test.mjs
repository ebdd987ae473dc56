// The timeline's GPU memory rows (issue 19) on the device fixture
// tests/fixtures/gpu/memory4 (4 ranks, one GPU, rank r holding (r + 1) x
// 64 MiB more through forward and backward): a memory row per rank, its
// area drawn, the peak label of rank 3 the largest, no console errors.
// usage: node memory.test.mjs URL OUT_DIR [CHROMIUM]
import { runTest } from './harness.mjs';

const [url, outDir, exe] = process.argv.slice(2);

await runTest(exe, async (page, check, errors) => {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  await page.click('#tabs button[data-tab="timeline"]');
  await page.waitForFunction(() => {
    const d = document.getElementById('tl').dataset;
    return d.memoryRows === '4' && Number(d.memoryDrawn) >= 2 && d.pending === '0';
  }, null, { timeout: 30000 }).catch(() => {});
  const ds = await page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  check(ds.memoryRows === '4', `a GPU memory row on each of the 4 ranks (${ds.memoryRows})`);
  check(Number(ds.memoryDrawn) >= 2, `memory drawn in the rows on screen (${ds.memoryDrawn}, ranks ${ds.visibleRanks})`);
  // The same answer the rows were drawn from: rank 3's GPU peaks highest.
  const peaks = await page.evaluate(async () => {
    const r = await fetch('/api/counters?ranks=0-3&px=400');
    const d = await r.json();
    const out = {};
    for (const s of d.series) if (s.device >= 0 && s.name === 'Total Allocated') out[s.rank] = Math.max(...s.points.map((p) => p[1]));
    return out;
  });
  check(peaks[3] === 546407424 && peaks[0] === 345080832, `peaks by rank as torch measured them (${JSON.stringify(peaks)})`);
  await page.screenshot({ path: `${outDir}/timeline-memory.png` });
  // Scrolled to the last rank: its row is drawn too.
  await page.$eval('#tl-wrap', (w) => { w.scrollTop = w.scrollHeight; });
  await page.waitForFunction(() => {
    const d = document.getElementById('tl').dataset;
    return d.visibleRanks.includes('3') && d.pending === '0' && Number(d.memoryDrawn) >= 1;
  }, null, { timeout: 20000 }).catch(() => {});
  const end = await page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  check(end.visibleRanks.includes('3') && Number(end.memoryDrawn) >= 1, `rank 3's memory drawn once scrolled to (${end.visibleRanks}, ${end.memoryDrawn})`);
  await page.screenshot({ path: `${outDir}/timeline-memory-rank3.png` });
  // Zoomed in, the rows are redrawn from a new answer and stay drawn.
  await page.click('#tl-in');
  await page.click('#tl-in');
  await page.waitForFunction(() => document.getElementById('tl').dataset.pending === '0', null, { timeout: 20000 }).catch(() => {});
  const z = await page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  check(Number(z.memoryDrawn) >= 1, `memory still drawn zoomed in (${z.memoryDrawn})`);
  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);
});
