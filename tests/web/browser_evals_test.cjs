// Headless Chromium (Debian's) against `baton serve` over the demo run with five eval results
// (browser_evals_test.sh): the run JSON lists them by step; the run page's loss chart holds the
// held-out loss beside the training loss at exactly those steps, its eval chart holds the total,
// video and action parts and really draws them (pixels of the eval colour on its screenshot),
// and its Evals table lists each step with the best one marked; the compare view has an eval
// series for the run with results and none for the run without. No page errors.
const path = require('path');
const { check, failures, consoleError, launchChromium } = require('./browser_lib.cjs');
const { decodePng, countColour } = require('./png_pixels.cjs');

const base = process.env.BASE_URL;
const ids = JSON.parse(process.env.FIXTURE_IDS);
const artifacts = process.env.ARTIFACTS;
const EVAL_COLOR = [227, 119, 194];  // run_evals.js EVAL_COLOR
const EXPECTED = [[100, 1.25, 0.875, 0.375], [200, 0.9375, 0.625, 0.3125], [300, 0.8125, 0.5625, 0.25],
  [400, 0.75, 0.5, 0.25], [600, 0.6875, 0.4375, 0.25]];
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function datasets(page, canvasId) {
  return page.evaluate((id) => {
    const c = window.Chart.getChart(document.getElementById(id));
    return c ? c.data.datasets.map((d) => ({ label: d.label, points: d.data.map((p) => [p.x, p.y]) })) : null;
  }, canvasId);
}

(async () => {
  const context = await launchChromium();
  const errors = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (consoleError(m)) errors.push(`console: ${m.text()} (${m.location().url})`); });
    const demo = ids.demo_run_id;

    await page.goto(`${base}#/runs/${demo}?axis=step`);
    await page.waitForSelector('body[data-ready="run"]', { timeout: 30000 });
    const api = await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}`)).json()).evals, demo);
    check(same(api.map((e) => [e.step, e.metrics.loss, e.metrics.loss_video, e.metrics.loss_action]), EXPECTED),
      `the run JSON lists the five results in step order (${JSON.stringify(api)})`);

    const loss = await datasets(page, 'chart-loss');
    const overlay = loss && loss.find((d) => d.label === 'eval (held-out)');
    check(!!overlay && same(overlay.points, EXPECTED.map(([s, l]) => [s, l])),
      `the loss chart has the eval loss at the evaluated steps (${JSON.stringify(overlay)})`);
    check(!!loss && loss.some((d) => d.label === 'total' && d.points.length > 100),
      'the loss chart still has the training loss beside it');
    const evalChart = await datasets(page, 'chart-eval');
    check(!!evalChart && evalChart.length === 3, `the eval chart has total, video and action (${evalChart && evalChart.map((d) => d.label)})`);
    if (evalChart && evalChart.length === 3) {
      for (let k = 0; k < 3; k++) {
        check(same(evalChart[k].points, EXPECTED.map((e) => [e[0], e[k + 1]])), `eval chart series ${evalChart[k].label} holds the results`);
      }
    }
    const shot = decodePng(await page.locator('#chart-eval').screenshot({ path: path.join(artifacts, 'run_page_evals.png') }));
    const drawn = countColour(shot, EVAL_COLOR, 30);
    check(drawn > 50, `the eval chart draws the eval loss (${drawn} pixels of its colour)`);

    const rows = await page.$$eval('#evals-table tbody tr', (rs) => rs.map((r) => [...r.children].map((td) => td.textContent)));
    check(same(rows.map((r) => r[0]), ['100', '200', '300', '400', '600']), `the Evals table lists the steps (${rows.map((r) => r[0])})`);
    check(rows.length === 5 && rows[4][1] === '0.6875', `the Evals table shows the loss (${rows[4] && rows[4][1]})`);
    const best = await page.$eval('#evals-table td.best-eval', (td) => td.textContent).catch(() => null);
    check(best === '600', `the best eval (lowest loss) is marked (${best})`);
    const note = await page.textContent('#evals-note');
    check(/5 checkpoints evaluated/.test(note) && /0\.6875 at step 600/.test(note), `the Evals note (${note})`);
    await page.screenshot({ path: path.join(artifacts, 'run_page_evals_full.png'), fullPage: true });

    // ---- compare: an eval series for the run that has results; none for the one without
    const other = ids.compare_run_ids[0];
    await page.evaluate(() => { document.body.dataset.ready = ''; });
    await page.goto(`${base}#/compare?runs=${demo},${other}&axis=step`);
    await page.waitForFunction(() => document.body.dataset.ready === 'compare', null, { timeout: 30000 });
    const cmp = await datasets(page, 'compare-eval');
    check(!!cmp && cmp.length === 2, `the compare view has an eval chart with a series per run (${cmp && cmp.length})`);
    if (cmp && cmp.length === 2) {
      check(same(cmp[0].points, EXPECTED.map(([s, l]) => [s, l])), 'the demo run\'s eval series holds its results');
      check(cmp[1].points.length === 0, `the run without evals has an empty series (${cmp[1].points.length})`);
    }
    await page.screenshot({ path: path.join(artifacts, 'compare_evals.png'), fullPage: true });
  } catch (e) {
    check(false, `unexpected: ${e.stack || e}`);
  } finally {
    await context.close();
  }
  check(errors.length === 0, `no page errors (${errors.join('; ')})`);
  console.log(failures.length ? `${failures.length} check(s) failed` : 'browser_evals_test: all checks passed');
  process.exit(failures.length ? 1 : 0);
})();
