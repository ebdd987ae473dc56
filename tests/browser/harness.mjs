// What both browser tests share: Debian's chromium with the flags the
// project's test rules name, a TAP-like check counter, a page that records
// console errors, and the run that closes the browser and sets the exit code.
import { chromium } from 'playwright-core';

// Runs body(page, check, errors) on a 1500x950 page; an exception counts as
// one failure. Prints the totals and exits 1 if anything failed.
export async function runTest(exe, body) {
  let passed = 0, failed = 0;
  const check = (cond, what) => {
    if (cond) { passed++; console.log(`ok - ${what}`); } else { failed++; console.log(`not ok - ${what}`); }
  };
  const browser = await chromium.launch({
    executablePath: exe || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    await body(page, check, errors);
  } catch (e) {
    failed++;
    console.log(`not ok - ${e.message}`);
  } finally {
    await browser.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
