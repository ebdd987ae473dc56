// The viewer at scale: a synthetic run of N ranks (8, 256, 1,024; run.sh
// makes them) with one straggler. Checks what breaks first when ranks grow:
// a canvas past Chromium's 32,767 px limit or taller than the viewport (a
// blank page), a first paint long after the data came, frames too slow to
// zoom or scroll; and that the heat map marks the straggler, a click on it
// opens that rank on the timeline, and the search box finds a rank.
// Times are measured in the page (performance.now() around a frame, and
// Resource Timing for when an answer arrived), never across playwright
// calls, so a loaded machine slows the test without failing it.
// Screenshots: overview-heatmap-N.png, timeline-N.png, timeline-expanded-N.png.
// usage: node scale.test.mjs URL OUTDIR CHROMIUM N STRAGGLER
import { runTest } from './harness.mjs';

const [url, outDir, exe, nArg, stArg] = process.argv.slice(2);
const N = Number(nArg), STRAGGLER = Number(stArg);
const FIRST_PAINT_MS = 2000;   // from the answer's last byte to the frame that shows it
const FRAME_MS = 50;           // one zoom or scroll frame
const MAX_SIDE = 32767;        // Chromium's canvas limit, device px
// Whether rank r is in a list like "0-40,517".
const inList = (list, r) => list.split(',').some((p) => { const [a, b = a] = p.split('-').map(Number); return r >= a && r <= b; });

await runTest(exe, async (page, check, errors) => {
  const tl = () => page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  const settled = () => page.waitForFunction(() => {
    const d = document.getElementById('tl').dataset;
    return d.pending === '0' && d.loaded;
  }, null, { timeout: 30000 });
  // First paint of a canvas: its data-first-paint less the end of the last
  // answer of these endpoints that came before it.
  const firstPaint = (sel, re) => page.evaluate(([sel, re]) => {
    const at = Number(document.querySelector(sel).dataset.firstPaint), rx = new RegExp(re);
    const ends = performance.getEntriesByType('resource').filter((e) => rx.test(e.name) && e.responseEnd <= at).map((e) => e.responseEnd);
    return ends.length ? at - Math.max(...ends) : NaN;
  }, [sel, re]);
  // Distinct colours among a grid of pixels of a canvas region (CSS px).
  const colours = (sel, x, y, w, h) => page.$eval(sel, (c, [x, y, w, h]) => {
    const k = c.width / c.clientWidth, d = c.getContext('2d').getImageData(x * k, y * k, w * k, h * k).data, seen = new Set();
    for (let i = 0; i < d.length; i += 4 * 97) seen.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);
    return seen.size;
  }, [x, y, w, h]);
  const pixel = (sel, x, y) => page.$eval(sel, (c, [x, y]) => {
    const k = c.width / c.clientWidth;
    return [...c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), 1, 1).data.slice(0, 3)];
  }, [x, y]);
  const canvasSizes = () => page.$$eval('canvas', (cs) => cs.filter((c) => c.clientWidth).map((c) => ({
    id: c.id, w: c.width, h: c.height, cssH: c.clientHeight, wrapH: c.parentElement.clientHeight,
  })));
  const sizesOk = (what) => canvasSizes().then(async (cs) => {
    const bad = cs.filter((c) => c.w > MAX_SIDE || c.h > MAX_SIDE || c.cssH > 800 || (c.id === 'tl' && c.cssH > c.wrapH));
    check(bad.length === 0, `${what}: no canvas over ${MAX_SIDE} px or taller than its viewport (${JSON.stringify(cs)})`);
    // The time axis' labels are whole: none cut at the canvas' right edge
    // (the timeline says where its last label ends).
    if (what === 'overview') return;
    const ax = await page.$eval('#tl', (c) => [Number(c.dataset.axisRight), c.clientWidth]);
    check(ax[0] > 0 && ax[0] <= ax[1], `${what}: the time axis' last label ends within the canvas (${ax[0]} of ${ax[1]} px)`);
  });
  const inView = (rank) => page.evaluate((r) => window.htamerge.timeline.rankInView(r), rank);

  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });

  // Overview: the heat map, the straggler ticked in red.
  await page.waitForFunction(() => document.getElementById('heat').dataset.firstPaint, null, { timeout: 30000 });
  const heat = await page.$eval('#heat', (c) => Object.assign({ w: c.clientWidth, h: c.clientHeight }, c.dataset));
  const heatPaint = await firstPaint('#heat', '/api/heatmap');
  check(heatPaint < FIRST_PAINT_MS, `heat map drawn ${heatPaint.toFixed(0)} ms after its answer came (${heat.rows} rows x ${heat.cols} cols, ${heat.drawMs} ms to draw)`);
  check(Number(heat.rows) === Math.min(N, Number(heat.rows)) && Number(heat.rows) > 0, `heat map rows (${heat.rows} for ${N} ranks)`);
  const heatColours = await colours('#heat', 80, 8, heat.w - 90, Number(heat.rows) * Number(heat.rowHeight) - 4);
  check(heatColours >= 3, `the heat map is drawn (${heatColours} colours sampled)`);
  const red = await pixel('#heat', 73, Number(heat.stragglerY));
  check(heat.stragglerY && red[0] > 150 && red[1] < 80 && red[2] < 80, `the straggler's row is ticked red (rgb ${red} at y ${heat.stragglerY})`);
  await sizesOk('overview');
  await (await page.$('.heat-card')).screenshot({ path: `${outDir}/overview-heatmap-${N}.png` });

  // Timeline: first paint, what is drawn, frames.
  await page.click('#tabs button[data-tab="timeline"]');
  await settled();
  const d0 = await tl();
  const tlPaint = await firstPaint('#tl', '/api/(timeline|heatmap)');
  check(tlPaint < FIRST_PAINT_MS, `timeline drawn ${tlPaint.toFixed(0)} ms after its answers came`);
  check(d0.groups === String(N), `timeline has ${N} rank groups (${d0.groups})`);
  check(N > 16 ? d0.expanded === '' : d0.expanded === `0-${N - 1}`, `ranks start ${N > 16 ? 'collapsed' : 'expanded'} (${d0.expanded})`);
  const tlColours = await colours('#tl', 200, 30, 600, Number(d0.canvasHeight) - 40);
  check(tlColours >= 3, `the timeline is drawn (${tlColours} colours sampled, ranks ${d0.visibleRanks} in view)`);
  await sizesOk('timeline');
  await page.screenshot({ path: `${outDir}/timeline-${N}.png` });

  // A frame is judged by the median of three (one may meet a GC pause or
  // another process), then the frame its data drew.
  const frames = {};
  const frame = async (what, acts) => {
    const ms = [];
    for (const act of acts) { await act(); ms.push(Number((await tl()).drawMs)); }
    await settled();
    const withData = Number((await tl()).drawMs), median = ms.slice().sort((a, b) => a - b)[1];
    frames[what] = [median, withData];
    check(median < FRAME_MS && withData < FRAME_MS, `${what} frames ${ms.join(', ')} ms (median ${median}), with its data ${withData} ms`);
  };
  const key = (k) => () => page.keyboard.press(k);
  // Scrolls by dy (a key, or pixels) and waits for the frame that shows it.
  const scroll = (how) => async () => {
    const before = (await tl()).top;
    if (typeof how === 'string') await page.keyboard.press(how);
    else await page.evaluate((dy) => { document.getElementById('tl-wrap').scrollTop += dy; }, how);
    await page.waitForFunction((t) => {
      const w = document.getElementById('tl-wrap');
      return document.getElementById('tl').dataset.top === String(Math.round(w.scrollTop)) && String(Math.round(w.scrollTop)) !== t;
    }, before, { timeout: 10000 });
  };
  await page.focus('#tl-wrap');
  await frame('zoom', [key('w'), key('w'), key('s')]);
  await frame('scroll', [scroll('PageDown'), scroll('PageUp'), scroll('PageDown')]);
  check(N <= 16 || (await tl()).visibleRanks !== d0.visibleRanks, `PageDown scrolls the ranks (${d0.visibleRanks} -> ${(await tl()).visibleRanks})`);

  // A click on the straggler's row of the heat map: the timeline, that rank
  // expanded and in view, zoomed in around the time clicked.
  await page.click('#tabs button[data-tab="overview"]');
  const hb = await (await page.$('#heat')).boundingBox();
  await page.mouse.click(hb.x + 78 + (hb.width - 86) * 0.4, hb.y + Number(heat.stragglerY));
  await page.waitForSelector('#tab-timeline.active');
  await settled();
  const d1 = await tl();
  check(inList(d1.expanded, STRAGGLER), `the click on the straggler's row expanded it (expanded: ${d1.expanded})`);
  check(await inView(STRAGGLER), `rank ${STRAGGLER} is in view (ranks ${d1.visibleRanks})`);
  check(Number(d1.t1) - Number(d1.t0) < (Number(d0.t1) - Number(d0.t0)) / 10, `zoomed in around the click (${d1.t0}..${d1.t1})`);
  check(Number(d1.slices) > 0, `its slices drawn (${d1.slices})`);
  await frame('zoom, expanded', [key('s'), key('w'), key('s')]);
  await frame('scroll, expanded', [scroll(-300), scroll(300), scroll(-300)]);
  await sizesOk('timeline, expanded');
  await page.screenshot({ path: `${outDir}/timeline-expanded-${N}.png` });

  // The search box: "rank K" opens rank K.
  const K = N - 2;
  await page.fill('#tl-search', `rank ${K}`);
  await page.press('#tl-search', 'Enter');
  await page.waitForFunction((k) => window.htamerge.timeline.rankInView(k), K, { timeout: 10000 });
  await settled();
  const d2 = await tl();
  check(await inView(K) && inList(d2.expanded, K), `search "rank ${K}" expands it and scrolls to it (expanded ${d2.expanded}, in view ${d2.visibleRanks})`);

  // The jump box's other forms at this scale: a step (the view spans it),
  // a collective instance (highlighted on every rank, its late rank
  // named), an NVTX range by name (selected, its late rank named).
  const jump = async (text, done) => {
    const before = await tl();
    await page.fill('#tl-search', text);
    await page.press('#tl-search', 'Enter');
    await page.waitForFunction(done, before, { timeout: 10000 }).catch(() => {});
    await settled();
    return tl();
  };
  const step = await page.evaluate(async () => {
    const rows = (await (await fetch('/api/report/steps?steps=3&all_ranks=1')).json()).steps.filter((r) => r.step === 3);
    return { lo: Math.min(...rows.map((r) => r.start_ns)), hi: Math.max(...rows.map((r) => r.start_ns + r.dur_us * 1000)),
             origin: window.htamerge.timeline.origin };
  });
  const d3 = await jump('step 3', (b) => document.getElementById('tl').dataset.t0 !== b.t0);
  check(step.origin + Number(d3.t0) <= step.lo && step.origin + Number(d3.t1) >= step.hi - 1000 &&
        Number(d3.t1) - Number(d3.t0) < 2 * (step.hi - step.lo), `search "step 3" shows step 3 (${d3.t0}..${d3.t1})`);
  const d4 = await jump('allreduce 4', () => document.getElementById('tl').dataset.highlight);
  check(d4.highlight && d4.highlight.split(',').length === N && d4.lateRank === String(STRAGGLER),
        `search "allreduce 4" highlights it on ${d4.highlight ? d4.highlight.split(',').length : 0} of ${N} ranks, late rank ${d4.lateRank}`);
  const d5 = await jump('backward', () => document.getElementById('tl').dataset.nvtxSelected);
  check(d5.nvtxSelected !== '' && d5.nvtxLateRank === String(STRAGGLER),
        `search "backward" selects a stitched NVTX range (${d5.nvtxSelected}, late rank ${d5.nvtxLateRank})`);

  const sizes = await page.evaluate(() => {
    const by = {};
    for (const e of performance.getEntriesByType('resource')) {
      const m = /\/api\/([a-z]+)/.exec(e.name);
      if (m) by[m[1]] = Math.max(by[m[1]] || 0, e.encodedBodySize);
    }
    return by;
  });
  console.log(`# ${N} ranks: heat map first paint ${heatPaint.toFixed(0)} ms, timeline ${tlPaint.toFixed(0)} ms; ` +
    `frames (ms, then with data) ${JSON.stringify(frames)}; largest answers (bytes) ${JSON.stringify(sizes)}`);
  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);
});
