// Live mode in headless chromium: the page is opened on `htamerge --serve`
// while `mpirun -n 2 htamerge ... htamerge-synth` still runs (run.sh starts
// it). Checks what a person watching would see: the "live" badge, a
// timeline that shows more of the run on later polls (span, drawn slices,
// NVTX ranges once stitched), once the job ends the badge saying the run
// completed with the timeline still drawn (the server lingers), and once
// the server stops (Ctrl-C to mpirun, sent from here) the badge saying so
// with the page kept. Nothing waits a fixed time for the run: each step
// waits for the state it checks, so a loaded machine only makes it slower.
// Screenshots are saved.
// usage: node live.test.mjs URL OUTDIR CHROMIUM MPIRUN_PID RUN_LOG
import { readFileSync } from 'node:fs';
import { runTest } from './harness.mjs';

const [url, outDir, exe, mpirunPid, runLog] = process.argv.slice(2);
const RUN_DEADLINE_MS = 240000;   // the whole run, however slow the machine (run.sh bounds it too)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const logSays = (re) => { try { return re.test(readFileSync(runLog, 'utf8')); } catch (e) { return false; } };
await runTest(exe, async (page, check, errors) => {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  const status = () => page.textContent('#status');
  const first = await status();
  check(/live/.test(first), `the badge says the run is live ("${first}")`);

  await page.click('#tabs button[data-tab="timeline"]');
  await page.waitForFunction(() => document.getElementById('tl').dataset.loaded);
  const ds = () => page.$eval('#tl', (c) => Object.assign({}, c.dataset));
  const span = () => page.evaluate(() => window.htamerge.state.run.span_ns);
  const early = { ...(await ds()), span: await span() };
  await page.screenshot({ path: `${outDir}/live-early.png` });

  // Polls until the run is over (the page polls /api/run every 2 s), noting
  // whether the timeline grew while it was live. The server outlives the
  // job (--serve-linger), so the page sees the end however late it comes.
  let grewLive = false, last = early;
  const deadline = Date.now() + RUN_DEADLINE_MS;
  while (/live/.test(await status()) && Date.now() < deadline) {
    await page.waitForTimeout(500);
    last = { ...(await ds()), span: await span() };
    if (last.span > early.span && Number(last.slices) > Number(early.slices)) grewLive = true;
  }
  check(grewLive, `the timeline grew while the run was live (span ${early.span} -> ${last.span} ns, slices ${early.slices} -> ${last.slices})`);
  const done = await status();
  check(!/live/.test(done) && /complete/.test(done), `the badge says the run completed ("${done}")`);

  // The finished file: the whole run drawn, stitched NVTX ranges included.
  await page.waitForTimeout(2500);   // one more poll: the final file
  // The count of slices drawn one by one is no measure of the run's length:
  // over a longer span more of them share a pixel column and are drawn as
  // bands. So: the view covers the whole, longer run, and it is drawn.
  await page.keyboard.press('0');
  await page.waitForFunction((s) => {
    const d = document.getElementById('tl').dataset;
    return Number(d.t1) - Number(d.t0) > s && d.loaded;
  }, early.span, { timeout: 10000 });
  // The stitched NVTX ranges come with the finished file's analyses, which
  // a sanitizer build takes seconds longer to write; the live page must pick
  // them up itself (the server's version moves only with what its timeline
  // serves: tests/cli/test_serve.sh). Bounded wait.
  await page.waitForFunction(() => {
    const d = document.getElementById('tl').dataset;
    return d.nvtxGroups === '2' && Number(d.nvtx) > 0;
  }, null, { timeout: 20000 }).catch(() => {});
  const end = { ...(await ds()), span: await span() };
  check(end.span > early.span, `the whole run is longer than at first (${early.span} -> ${end.span} ns)`);
  check(Number(end.slices) > 0, `slices drawn over the whole run (${end.slices}; ${early.slices} at first)`);
  check(end.groups === '2', `2 rank groups (${end.groups})`);
  check(end.nvtxGroups === '2' && Number(end.nvtx) > 0, `NVTX rows drawn on both ranks (${end.nvtxGroups}, ${end.nvtx} ranges)`);
  await page.screenshot({ path: `${outDir}/live-done.png` });
  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);

  // The server stops (Ctrl-C to mpirun once rank 0 serves the finished
  // run): the page keeps what it shows and says so.
  while (!logSays(/still serving the finished run/) && Date.now() < deadline) await sleep(100);
  check(logSays(/still serving the finished run at http:/), 'rank 0 says where it still serves the finished run');
  process.kill(Number(mpirunPid), 'SIGINT');
  await page.waitForFunction(() => /server stopped/.test(document.getElementById('status').textContent),
    null, { timeout: 30000 });
  const stopped = await status();
  check(stopped === 'run complete; server stopped', `the badge says the run completed and the server stopped ("${stopped}")`);
  const kept = await ds();
  check(kept.slices === end.slices && kept.groups === '2', `the timeline is still drawn (${kept.slices} slices)`);
  const others = errors.filter((e) => !/ERR_CONNECTION_REFUSED|Failed to fetch/.test(e));
  check(others.length === 0, `no console errors but the refused connection (${others.join(' | ')})`);
  await page.screenshot({ path: `${outDir}/live-stopped.png` });
});
