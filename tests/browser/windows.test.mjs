// Capture windows on the timeline: the device fixture memory4_live (4 ranks,
// one GPU each) with counters added by run.sh, as live capture writes them:
// rank 0 a capture window 1.0-2.5 s, rank 1 its GPU not recorded 2.0-4.0 s
// and a capture window from 5.0 s to its end, rank 2 not recorded from 5.5 s
// to its end, rank 3 none. Checks that the hatched band and the teal bar are
// drawn where /api/windows puts them (canvas pixels), that hovering names
// them, the legend, the collapsed strips, the canvas within the viewport and
// no console errors.
// usage: node windows.test.mjs URL OUT_DIR [CHROMIUM]
import { runTest } from './harness.mjs';

const [url, outDir, exe] = process.argv.slice(2);
const S = 1e9;

// The colour of canvas pixel (x, y) in CSS pixels, and the drawn tips.
const probe = (page, kind) => page.evaluate((k) => {
  const tl = window.htamerge.timeline, cv = document.getElementById('tl');
  const t = tl.tips.find((h) => h.kind === k && h.w > 20);
  if (!t) return null;
  const x = t.x + t.w / 2, y = t.y + t.h / 2, r = cv.width / cv.clientWidth;
  const [red, green, blue] = cv.getContext('2d').getImageData(Math.round(x * r), Math.round(y * r), 1, 1).data;
  return { x, y, rgb: [red, green, blue] };
}, kind);

const settled = (page, cond) => page.waitForFunction(cond, null, { timeout: 30000 }).catch(() => {});

// Moves the pointer over canvas point (x, y); the tooltip's text when shown.
async function hoverText(page, { x, y }) {
  const box = await (await page.$('#tl')).boundingBox();
  await page.mouse.move(box.x + x, box.y + y);
  return page.$eval('#tl-tip', (t) => (t.hidden ? '' : t.textContent));
}

await runTest(exe, async (page, check, errors) => {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  const ans = await page.evaluate(async () => (await fetch('/api/windows')).json());
  const w = ans.windows.map((x) => `${x.rank}:${x.kind}:${(x.start / 1e9).toFixed(1)}`).join(' ');
  check(w === '0:capture:1.0 1:capture:5.0 1:paused:2.0 2:paused:5.5', `/api/windows lists the 4 windows (${w})`);
  check(ans.windows.every((x) => x.end > x.start) && ans.windows[1].end > 6 * S, 'an open window lasts to its rank\'s end');

  await page.click('#tabs button[data-tab="timeline"]');
  await settled(page, () => {
    const d = document.getElementById('tl').dataset;
    return d.pending === '0' && Number(d.pausedDrawn) >= 2 && Number(d.captureDrawn) >= 2;
  });
  const ds = await page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  check(Number(ds.pausedDrawn) >= 2, `GPU-not-recorded bands drawn on ranks 1 and 2 (${ds.pausedDrawn})`);
  check(Number(ds.captureDrawn) >= 2, `capture bars drawn on ranks 0 and 1 (${ds.captureDrawn})`);
  check(await page.$eval('#tl-legend', (l) => !l.hidden && l.textContent.includes('GPU not recorded (CUPTI detached)')
    && l.textContent.includes('capture window')), 'the legend lists both');

  // The band is grey hatching over the light track; the bar is teal.
  const band = await probe(page, 'paused'), bar = await probe(page, 'capture');
  const grey = band && Math.max(...band.rgb) - Math.min(...band.rgb) < 30 && band.rgb[0] < 235;
  check(grey, `the band's pixels are grey (${band && band.rgb})`);
  check(bar && bar.rgb[0] < 40 && bar.rgb[1] > 110 && bar.rgb[2] > 100, `the bar's pixels are teal (${bar && bar.rgb})`);
  const bandTip = band ? await hoverText(page, band) : '';
  check(bandTip.startsWith('GPU not recorded (CUPTI detached) · rank '), `hovering the band names it (${bandTip})`);
  const barTip = bar ? await hoverText(page, bar) : '';
  check(barTip.startsWith('capture window · rank '), `hovering the bar names it (${barTip})`);
  await page.screenshot({ path: `${outDir}/timeline-windows.png` });

  // Collapsed: the band covers the strip, the bar runs along its top.
  await page.mouse.move(5, 5);
  await page.click('#tl-expand');
  await settled(page, () => {
    const d = document.getElementById('tl').dataset;
    return d.expanded === '' && d.pending === '0' && Number(d.pausedDrawn) >= 2 && Number(d.captureDrawn) >= 2;
  });
  const cs = await page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  check(cs.expanded === '' && Number(cs.pausedDrawn) === 2 && Number(cs.captureDrawn) === 2,
    `collapsed: one band on each of 2 strips, one bar on each of 2 (${cs.pausedDrawn}, ${cs.captureDrawn})`);
  const sband = await probe(page, 'paused');
  const stip = sband ? await hoverText(page, sband) : '';
  check(stip.includes('GPU not recorded'), `a strip's band names itself too (${stip})`);
  await page.screenshot({ path: `${outDir}/timeline-windows-collapsed.png` });

  const h = await page.evaluate(() => ({ canvas: document.getElementById('tl').getBoundingClientRect().height,
    view: window.innerHeight }));
  check(h.canvas <= h.view, `the canvas stays within the viewport (${h.canvas} <= ${h.view})`);
  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);
});
