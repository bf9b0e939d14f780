// Headless Chromium (Debian's) against `baton serve` over the fixture's sweep (sweep_fixture.h):
// the sweeps list names it with its members and status counts and links its page; the members
// table sorts by a varied key (both ways, ties in member order) and by the final loss, in the
// order the API's figures give; the plot of a chosen final figure against a chosen varied key
// holds exactly the members' (key, figure) pairs and really draws them (pixels of its colour on
// the canvas screenshot); two members selected, "compare" opens the compare page with exactly
// their runs. No page errors. Screenshots go to $ARTIFACTS.
const path = require('path');
const { check, failures, consoleError, launchChromium } = require('./browser_lib.cjs');
const { decodePng, countColour } = require('./png_pixels.cjs');

const base = process.env.BASE_URL;
const ids = JSON.parse(process.env.FIXTURE_IDS);
const artifacts = process.env.ARTIFACTS;
const POINT = [31, 119, 180];  // sweeps_page.js POINT_COLOR
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// Members' run ids in the order the page must show for a sort (the page's rule: nulls last,
// ties in member order).
function expectedOrder(members, key, desc) {
  const v = (m) => (key === 'index' ? m.index : (key in m.values ? m.values[key] : m[key] ?? null));
  const cmp = (a, b) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);
  return [...members].sort((a, b) => (desc ? -1 : 1) * cmp(v(a), v(b))).map((m) => String(m.run_id));
}

async function memberRows(page) {
  return page.$$eval('#members tbody tr', (rows) => rows.map((r) => ({
    run: r.querySelector('input.select-member').dataset.run,
    cells: [...r.children].map((td) => td.textContent),
  })));
}

// Runs `action`, then waits until the app has drawn `view` again (route() clears the mark).
async function navigate(page, view, action) {
  await page.evaluate(() => { document.body.dataset.ready = ''; });
  await action();
  await page.waitForFunction((v) => document.body.dataset.ready === v, view, { timeout: 15000 });
}

async function plotData(page) {
  return page.evaluate(() => {
    const c = window.Chart.getChart(document.getElementById('sweep-plot'));
    if (!c) return null;
    const a = c.chartArea;
    return { points: c.data.datasets[0].data.map((p) => [p.x, p.y]),
      x: c.options.scales.x.title.text, y: c.options.scales.y.title.text, xType: c.scales.x.type,
      area: { left: a.left, right: a.right, top: a.top, bottom: a.bottom } };
  });
}

// Runs of adjacent pixel columns inside `area` (the chart's plot area, CSS pixels of a
// device-pixel-ratio-1 screenshot) that hold pixels of `colour`: one per distinct x drawn.
function columnGroups(img, area, colour, tol = 30) {
  let groups = 0, inGroup = false;
  for (let x = Math.ceil(area.left); x < Math.floor(area.right); x++) {
    let hit = false;
    for (let y = Math.ceil(area.top); y < Math.floor(area.bottom) && !hit; y++) {
      const i = (y * img.width + x) * 4;
      hit = Math.abs(img.rgba[i] - colour[0]) <= tol && Math.abs(img.rgba[i + 1] - colour[1]) <= tol &&
        Math.abs(img.rgba[i + 2] - colour[2]) <= tol;
    }
    if (hit && !inGroup) groups++;
    inGroup = hit;
  }
  return groups;
}

const sortPairs = (pairs) => [...pairs].sort((a, b) => a[0] - b[0] || a[1] - b[1]);

(async () => {
  const context = await launchChromium();
  const errors = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (consoleError(m)) errors.push(`console: ${m.text()} (${m.location().url})`); });

    // ---- the sweeps list
    await page.goto(`${base}#/sweeps`);
    await page.waitForSelector('body[data-ready="sweeps"]', { timeout: 15000 });
    const list = await page.$$eval('#sweeps tbody tr', (rows) => rows.map((r) =>
      [...r.children].map((td) => td.textContent)));
    check(list.length === 1 && list[0][0] === 'lr-seed' && list[0][1] === '8800' && list[0][2] === '6',
      `the sweeps list names the sweep, its array and 6 members (${JSON.stringify(list)})`);
    check(list.length === 1 && /COMPLETED 5/.test(list[0][3]) && /RUNNING 1/.test(list[0][3]),
      `the sweeps list counts 5 COMPLETED and 1 RUNNING (${list.length ? list[0][3] : ''})`);
    await page.screenshot({ path: path.join(artifacts, 'sweeps_list.png'), fullPage: true });

    // ---- the sweep page, by its link
    await navigate(page, 'sweep', () => page.click('#sweeps a.sweep-name'));
    check(page.url().endsWith(`#/sweeps/${ids.sweep_id}`), `the link opens the sweep's page (${page.url()})`);
    const api = await page.evaluate(async (id) => (await fetch(`/api/sweeps/${id}`)).json(), ids.sweep_id);
    const members = api.members;
    check(members.length === 6 && same(members.map((m) => m.run_id), ids.sweep_run_ids),
      'the API lists the 6 members in index order');
    let rows = await memberRows(page);
    check(same(rows.map((r) => r.run), ids.sweep_run_ids.map(String)), 'the members table starts in index order');
    const head = await page.$$eval('#members thead th', (ths) => ths.map((th) => th.textContent));
    const col = (label) => head.findIndex((h) => h.replace(/ [▲▼]$/, '') === label);
    check(col('optim.lr') > 0 && col('run.seed') > 0 && col('final loss') > 0,
      `the table has a column per varied key and the final loss (${head.join(' | ')})`);

    // ---- sort by a varied key, both ways
    await navigate(page, 'sweep', () => page.click('#members a.sort[data-key="optim.lr"]'));
    rows = await memberRows(page);
    check(same(rows.map((r) => r.run), expectedOrder(members, 'optim.lr', false)),
      `sorted by optim.lr ascending (${rows.map((r) => r.cells[col('optim.lr')]).join(', ')})`);
    check(/sort=optim.lr/.test(page.url()) && /order=asc/.test(page.url()), `the sort is in the URL (${page.url()})`);
    await navigate(page, 'sweep', () => page.click('#members a.sort[data-key="optim.lr"]'));
    rows = await memberRows(page);
    const lrDesc = expectedOrder(members, 'optim.lr', true);
    check(same(rows.map((r) => r.run), lrDesc),
      `sorted by optim.lr descending, ties in member order (${rows.map((r) => r.run).join(',')}; want ${lrDesc.join(',')})`);
    const lrShown = rows.map((r) => Number(r.cells[col('optim.lr')]));
    check(lrShown.every((v, i) => i === 0 || v <= lrShown[i - 1]), `the lr column reads descending (${lrShown})`);

    // ---- sort by a final figure
    await navigate(page, 'sweep', () => page.click('#members a.sort[data-key="final_loss"]'));
    rows = await memberRows(page);
    const byLoss = expectedOrder(members, 'final_loss', false);
    check(same(rows.map((r) => r.run), byLoss), `sorted by final loss (${rows.map((r) => r.cells[col('final loss')]).join(', ')})`);
    check(!same(byLoss, ids.sweep_run_ids.map(String)) && !same(byLoss, expectedOrder(members, 'optim.lr', false)),
      'the final-loss order is neither the index nor the lr order (the sort is seen)');
    const lossShown = rows.map((r) => Number(r.cells[col('final loss')]));
    check(lossShown.every((v, i) => i === 0 || v >= lossShown[i - 1]), `the final loss column reads ascending (${lossShown})`);

    // ---- the plot: final loss against each varied key, then restarts
    for (const x of ['optim.lr', 'run.seed']) {
      await navigate(page, 'sweep', () => page.selectOption('#plot-x', x));
      const d = await plotData(page);
      const want = sortPairs(members.filter((m) => m.final_loss !== null).map((m) => [m.values[x], m.final_loss]));
      check(d && same(sortPairs(d.points), want) && d.x === x && d.y === 'final loss',
        `the plot holds each member's (${x}, final loss) (${d && JSON.stringify(d.points)})`);
      const xType = x === 'optim.lr' ? 'logarithmic' : 'linear';
      check(d && d.xType === xType, `${x} (spanning ${x === 'optim.lr' ? 'a decade' : 'less'}) is on a ${xType} axis (${d && d.xType})`);
      const shot = decodePng(await page.locator('#sweep-plot').screenshot({ path: path.join(artifacts, `sweep_plot_${x}.png`) }));
      const drawn = countColour(shot, POINT, 30);
      const columns = d ? columnGroups(shot, d.area, POINT) : 0;
      const distinct = new Set(want.map((p) => p[0])).size;
      check(drawn >= 100 && columns === distinct,
        `the plot against ${x} draws its points (${drawn} pixels of the point colour, at ${columns} x positions; want ${distinct})`);
    }
    await navigate(page, 'sweep', () => page.selectOption('#plot-y', 'restarts'));
    const r = await plotData(page);
    const wantRestarts = sortPairs(members.map((m) => [m.values['run.seed'], m.restarts]));
    check(r && same(sortPairs(r.points), wantRestarts) && r.y === 'restarts' && /y=restarts/.test(page.url()),
      `another figure: restarts against run.seed (${r && JSON.stringify(r.points)})`);
    check(members.some((m) => m.restarts === 1), 'a member restarted once (the figure varies)');
    await page.screenshot({ path: path.join(artifacts, 'sweep_page.png'), fullPage: true });

    // ---- select two members, compare
    const chosen = [ids.sweep_run_ids[4], ids.sweep_run_ids[1]].map(String);
    for (const id of chosen) await page.check(`#members input.select-member[data-run="${id}"]`);
    await navigate(page, 'compare', () => page.click('#compare'));
    const hash = decodeURIComponent(new URL(page.url()).hash);
    const compared = await page.$$eval('#compare-runs a.run-name', (as) => as.map((a) => a.getAttribute('href').replace('#/runs/', '')));
    check(hash.startsWith('#/compare?runs=') && same([...compared].sort(), [...chosen].sort()),
      `compare opens with exactly the selected runs (${hash}: ${compared})`);
    await page.screenshot({ path: path.join(artifacts, 'sweep_compare.png'), fullPage: true });
  } catch (e) {
    failures.push(`exception: ${e.stack || e}`);
  }
  check(errors.length === 0, `no page errors (${errors.join(' | ')})`);
  await context.close();
  console.log(failures.length ? `browser sweeps test: ${failures.length} failed` : 'browser sweeps test: all passed');
  process.exit(failures.length ? 1 : 0);
})();
