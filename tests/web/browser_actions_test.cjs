// Headless Chromium (Debian's) against `baton serve --auth tokens`: the run page's Cancel button
// (confirmed in the dialog) cancels the owner's run through POST /api/runs/ID/cancel with the
// token from the page URL in the Authorization header; the page then shows the run CANCELLED and
// the audit list with the action; another user's click is refused (403, the server's message on
// the page) and listed as denied; the runs page filters by owner and shows the owner column.
// No page errors but the expected 403. Screenshots go to $ARTIFACTS.
const path = require('path');
const { check, failures, consoleError, launchChromium } = require('./browser_lib.cjs');

const base = process.env.BASE_URL;
const run = process.env.RUN_ID;
const artifacts = process.env.ARTIFACTS;

async function auditRows(page) {
  return page.$$eval('#actions-table tbody tr', (rows) => rows.map((r) =>
    [...r.children].map((td) => td.textContent)));
}

(async () => {
  const context = await launchChromium();
  const errors = [], dialogs = [];
  try {
    // ---- bob opens alice's run: the button is there, the server refuses
    let page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (consoleError(m) && !/status of 403/.test(m.text())) errors.push(`console: ${m.text()} (${m.location().url})`); });
    page.on('dialog', (d) => { dialogs.push(d.message()); d.accept().catch(() => {}); });
    await page.goto(`${base}?token=${process.env.BOB_TOKEN}#/runs/${run}`);
    await page.waitForSelector('body[data-ready="run"]', { timeout: 15000 });
    check(await page.$eval('#cancel-run', (b) => !b.disabled), 'a live run shows an enabled Cancel button');
    check(await page.$('#actions-none') !== null, 'no actions listed before any');
    await page.click('#cancel-run');
    await page.waitForFunction(() => /refused/.test(document.getElementById('action-result').textContent), null, { timeout: 10000 });
    const refused = await page.$eval('#action-result', (e) => e.textContent);
    check(/403/.test(refused) && /only its owner/.test(refused), `another user's cancel is refused on the page (${refused})`);
    check(dialogs.length === 1 && /cancel run/.test(dialogs[0]), `the click asks first (${dialogs})`);
    await page.close();

    // ---- alice, the owner, cancels it
    await context.clearCookies();
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (consoleError(m)) errors.push(`console: ${m.text()} (${m.location().url})`); });
    page.on('dialog', (d) => { dialogs.push(d.message()); d.accept().catch(() => {}); });
    await page.goto(`${base}?token=${process.env.ALICE_TOKEN}#/runs/${run}`);
    await page.waitForSelector('body[data-ready="run"]', { timeout: 15000 });
    const before = await auditRows(page);
    check(before.length === 1 && before[0][1] === 'bob' && before[0][4] === 'denied',
      `the refused click is in the audit list (${JSON.stringify(before)})`);
    await page.evaluate(() => { document.body.dataset.ready = ''; });
    await page.click('#cancel-run');
    await page.waitForFunction(() => document.body.dataset.ready === 'run' &&
      document.querySelectorAll('#actions-table tbody tr').length === 2, null, { timeout: 15000 });
    const status = await page.$eval('h1 .status', (e) => e.textContent);
    check(/CANCELLED/.test(status), `the page shows the run cancelled (${status})`);
    const rows = await auditRows(page);
    check(rows[0][1] === 'alice' && rows[0][2] === 'cancel' && rows[0][3] === 'web' && rows[0][4] === 'ok' && rows[0][5] === '200',
      `the audit list shows alice's cancel first (${JSON.stringify(rows)})`);
    check(await page.$eval('#cancel-run', (b) => b.disabled), 'Cancel is disabled once the run is cancelled');
    check(await page.$eval('#resume-run', (b) => !b.disabled), 'Resume is offered for the cancelled run');
    await page.screenshot({ path: path.join(artifacts, 'run_page_actions.png'), fullPage: true });

    // ---- the runs page: owner column and filter
    await page.goto(`${base}?token=${process.env.ALICE_TOKEN}#/?owner=alice`);
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    const owners = await page.$$eval('#runs-table td.owner', (tds) => tds.map((td) => td.textContent));
    check(owners.length === 1 && owners[0] === 'alice', `the owner filter keeps alice's run only (${owners})`);
    check(await page.$eval('#filter-owner', (i) => i.value) === 'alice', 'the owner filter is in the form');
  } catch (e) {
    failures.push(`exception: ${e.stack || e}`);
  }
  check(errors.length === 0, `no page errors (${errors.join(' | ')})`);
  await context.close();
  console.log(failures.length ? `browser actions test: ${failures.length} failed` : 'browser actions test: all passed');
  process.exit(failures.length ? 1 : 0);
})();
