// Headless Chromium (Debian's) on the run page's Incidents section (web/run_incidents.js): for a
// hung run, its incident (kind, outcome, attempt J.R.S, step, node and rank, cause, the stale
// rank's stack behind a fold) and a line per delivery: the receiver's confirmed, the closed
// port's pending with its tries and error; for a diverged run, both incidents newest first. Each
// row is checked against GET /api/runs/ID/incidents. No page errors. A screenshot goes to
// $ARTIFACTS.
const path = require('path');
const { check, failures, consoleError, launchChromium } = require('./browser_lib.cjs');

const base = process.env.BASE_URL;
const artifacts = process.env.ARTIFACTS;

// The section's rows as {kind, outcome, attempt, step, where, cause, stack, alerts: [lines]}.
async function incidentRows(page) {
  return page.$$eval('#incidents-table tbody tr', (rows) => rows.map((r) => {
    const td = [...r.children];
    const pre = td[6].querySelector('details pre');
    return {
      kind: td[1].textContent, outcome: td[2].textContent, attempt: td[3].textContent,
      step: td[4].textContent, where: td[5].textContent,
      cause: td[6].querySelector('div').textContent, excerpt: pre ? pre.textContent : '',
      folded: pre ? !td[6].querySelector('details').open : null,
      alerts: [...td[7].querySelectorAll('.delivery')].map((d) => d.textContent),
    };
  }));
}

async function openRun(context, id, errors) {
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (consoleError(m)) errors.push(`console: ${m.text()} (${m.location().url})`); });
  await page.goto(`${base}#/runs/${id}`);
  await page.waitForSelector('body[data-ready="run"]', { timeout: 15000 });
  return page;
}

(async () => {
  const context = await launchChromium();
  const errors = [];
  try {
    // ---- the hung run: one incident, two sinks
    let page = await openRun(context, process.env.HUNG_RUN, errors);
    // The page first, then the API: the closed port's tries only grow in between.
    const hung = await incidentRows(page);
    const api = await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}/incidents`)).json()), process.env.HUNG_RUN);
    check(await page.$eval('#run-incidents h2', (h) => h.textContent) === 'Incidents', 'the run page has an Incidents section');
    check(hung.length === 1 && api.incidents.length === 1, `one incident on the page and in the API (${hung.length}, ${api.incidents.length})`);
    const h = hung[0] || {}, a = api.incidents[0] || {};
    check(h.kind === 'hang' && h.outcome === 'open' && h.attempt === '100.0.0' && h.attempt === a.attempt,
      `kind, outcome and attempt as J.R.S (${h.kind}, ${h.outcome}, ${h.attempt})`);
    check(h.step === String(a.step), `the step (${h.step}, API ${a.step})`);
    check(h.where === 'node node7 · rank 1', `the node and the stale rank (${h.where})`);
    check(h.cause === a.cause && /stale ranks 1:micro-step/.test(h.cause), `the cause (${h.cause})`);
    check(h.excerpt === a.excerpt && /ncclAllReduce/.test(h.excerpt) && h.folded === true,
      `the stale rank's stack, folded (${JSON.stringify(h.excerpt)})`);
    check(h.alerts && h.alerts.length === 2 && h.alerts.includes('lab #1: sent'), `the confirmed delivery (${JSON.stringify(h.alerts)})`);
    const down = (h.alerts || []).find((l) => l.startsWith('down #1: pending (')) || '';
    const apiDown = (a.deliveries || []).find((d) => d.sink === 'down') || {};
    const m = /^down #1: pending \((\d+) (try|tries), (.+)\)$/.exec(down);
    check(m !== null && Number(m[1]) >= 1 && Number(m[1]) <= apiDown.tries && (m[2] === 'try') === (m[1] === '1') &&
      m[3] === apiDown.last_error && apiDown.last_error.length > 0,
      `the pending delivery with its tries and error (${down}; API ${apiDown.tries} tries, ${apiDown.last_error})`);
    check(!/s3cr3t|\/hook/.test(JSON.stringify(hung)), 'no webhook URL on the page');
    await page.click('#incidents-table details summary');
    check(await page.$eval('#incidents-table details', (d) => d.open && d.querySelector('pre').offsetHeight > 0),
      'the stack unfolds on a click');
    await page.screenshot({ path: path.join(artifacts, 'run_page_incidents.png'), fullPage: true });
    await page.close();

    // ---- the diverged run: the failure then the divergence (newest first), each delivered
    page = await openRun(context, process.env.BROKEN_RUN, errors);
    const broken = await incidentRows(page);
    check(broken.length === 2 && broken.map((r) => r.kind).sort().join() === 'diverged,failed',
      `two incidents: diverged and failed (${broken.map((r) => r.kind)})`);
    const div = broken.find((r) => r.kind === 'diverged') || {};
    check(div.outcome === 'failed' && /loss is NaN/.test(div.cause), `the divergence failed the run (${div.outcome}: ${div.cause})`);
    const fin = broken.find((r) => r.kind === 'failed') || {};
    check(fin.outcome === 'final' && broken.every((r) => r.alerts.includes('lab #1: sent')),
      `the failure is final; every incident was delivered (${JSON.stringify(broken.map((r) => r.alerts))})`);
    await page.close();
  } catch (e) {
    check(false, `exception: ${e.stack || e}`);
  }
  check(errors.length === 0, `no page errors (${errors.join(' | ')})`);
  await context.close();
  console.log(failures.length ? `browser incidents test: ${failures.length} failed` : 'browser incidents test: all passed');
  process.exit(failures.length ? 1 : 0);
})();
