// Headless Chromium (Debian's) against `baton serve`: the nodes page lists every node of the
// ledger with its status and until when (node-b excluded by baton after two SIGBUS, node-a ok
// with one hang, node-c excluded by hand with its reason), each node's incidents with run, job,
// rank and evidence (markup in evidence shown as text, never run), its actions, and the report
// text for the admins; the host link shows one node; the header links the page. No page errors.
// A screenshot goes to $ARTIFACTS.
const path = require('path');
const { check, failures, consoleError, launchChromium } = require('./browser_lib.cjs');

const base = process.env.BASE_URL;
const run = process.env.RUN_ID;

(async () => {
  const context = await launchChromium();
  const errors = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (consoleError(m)) errors.push(`console: ${m.text()}`); });
    await page.goto(`${base}#/`);
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    await page.click('#nav-nodes');
    await page.waitForSelector('body[data-ready="nodes"]', { timeout: 15000 });
    check(page.url().endsWith('#/nodes'), `the header's link opens the nodes page (${page.url()})`);

    const rows = await page.$$eval('#nodes tbody tr', (trs) => trs.map((r) =>
      [...r.children].map((td) => td.textContent)));
    const byHost = Object.fromEntries(rows.map((r) => [r[0], r]));
    check(rows.length === 3 && byHost['node-a'] && byHost['node-b'] && byHost['node-c'],
      `three nodes listed (${JSON.stringify(rows)})`);
    const b = byHost['node-b'] || [], a = byHost['node-a'] || [], c = byHost['node-c'] || [];
    check(b[3] === 'excluded' && /^excluded until \d{4}-\d\d-\d\d \d\d:\d\d$/.test(b[4]) && b[5] === '2',
      `node-b: excluded, until when, 2 incidents (${JSON.stringify(b)})`);
    check(a[3] === 'ok' && a[4] === '–' && a[5] === '1', `node-a: one hang excludes nothing (${JSON.stringify(a)})`);
    check(c[3] === `excluded by ${process.env.HAND_USER}` && /^excluded until/.test(c[4]) && c[5] === '0',
      `node-c: excluded by hand (${JSON.stringify(c)})`);
    const summary = await page.$eval('#nodes-summary', (e) => e.textContent);
    check(summary === '3 nodes in the ledger, 2 excluded now', `summary line (${summary})`);

    const incidents = await page.$$eval('section.node[data-host="node-b"] table.incidents tbody tr',
      (trs) => trs.map((r) => [...r.children].map((td) => td.textContent)));
    check(incidents.length === 2 && incidents.every((r) => r[1] === 'signal' && r[2] === `run ${run}` &&
      /^4242\.[01]\.0$/.test(r[3]) && r[5] === 'launcher'),
    `node-b's incidents: kind, run, job.restart.seq, source (${JSON.stringify(incidents)})`);
    const evidence = incidents.map((r) => r[6]).join('\n');
    check(evidence.includes('<img src=x onerror="window.pwned=1">'), 'evidence markup is shown as text');
    check(await page.evaluate(() => window.pwned === undefined && document.querySelectorAll('section.node img').length === 0),
      'evidence markup is never run');
    const runLink = await page.$eval('section.node[data-host="node-b"] table.incidents a', (a) => a.getAttribute('href'));
    check(runLink === `#/runs/${run}`, `an incident links its run (${runLink})`);
    const reason = await page.$eval('section.node[data-host="node-c"] p.muted', (e) => e.textContent);
    check(reason.includes('fan failure reported by the admins'), `node-c's reason is shown (${reason})`);
    await page.click('section.node[data-host="node-b"] details summary');
    const actions = await page.$$eval('section.node[data-host="node-b"] table.actions tbody tr',
      (trs) => trs.map((r) => [...r.children].map((td) => td.textContent)));
    check(actions.length >= 1 && actions[0][1] === 'baton' && actions[0][2] === 'exclude' && /2 counted incidents|incidents/.test(actions[0][3]),
      `node-b's audit: excluded by baton, why (${JSON.stringify(actions)})`);

    const report = await page.$eval('#node-report', (e) => e.textContent);
    check(/node-b .*excluded {2}excluded until/.test(report) && /signal {2}run \d+ {2}job 4242\.1\.0 {2}rank 1 {2}the trainer was killed by Bus error/.test(report) &&
      /node-c .*fan failure/.test(report.replace(/\n {2}reason: /g, ' ')),
    `the report text has each node, its status and each incident's job and evidence (${report.slice(0, 400)})`);
    await page.screenshot({ path: path.join(process.env.ARTIFACTS, 'nodes_page.png'), fullPage: true });

    await page.evaluate(() => { document.body.dataset.ready = ''; });
    await page.click('#nodes a.node-host >> text=node-b');
    await page.waitForSelector('body[data-ready="nodes"]', { timeout: 15000 });
    const one = await page.$$eval('#nodes tbody tr', (trs) => trs.map((r) => r.children[0].textContent));
    const title = await page.$eval('h1', (e) => e.textContent);
    check(one.length === 1 && one[0] === 'node-b' && title === 'Node node-b' && page.url().endsWith('#/nodes?host=node-b'),
      `the host link shows that node alone (${title}, ${JSON.stringify(one)}, ${page.url()})`);
    await page.goto(`${base}#/nodes?host=node-z`);
    await page.waitForSelector('body[data-ready="nodes"]', { timeout: 15000 });
    check(await page.$('#no-nodes') !== null, 'a host the ledger does not know says so');
  } finally {
    await context.close();
  }
  check(errors.length === 0, `no page errors (${errors.join('; ')})`);
  if (failures.length) {
    console.log(`${failures.length} check(s) failed`);
    process.exit(1);
  }
  console.log('PASS browser_nodes_test');
})().catch((e) => { console.error(e); process.exit(1); });
