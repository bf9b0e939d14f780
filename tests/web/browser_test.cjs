// Headless Chromium (Debian's, never a downloaded one) against a running `baton serve`.
// Checks: the runs page lists the demo run; the run page draws a non-empty LR chart with the
// attempt boundaries and the shaded warmup ranges; superseded points appear on request; the
// run with skipped non-finite steps marks them on the loss chart, lists them with their episode
// ids and shows each attempt's trainer end and message (markup in them shown as text); a run
// named <script>alert(1)</script> is shown as text (no dialog, no injected element); no page
// errors or CSP violations. The compare view of 3 runs draws each run's colour (pixels of its
// loss chart screenshot are counted), lists only differing config keys and keeps its state in
// the URL; the failed run's page says why it stopped and its log viewer shows the job log's
// tail as text (its screenshot has the light text on the dark panel), pages back, and refuses a
// log outside the run folder; the runs page filters by status, name, partition and date; a run
// with ~1 M step rows loads its page in under 1 s. The run page shows no stray null/undefined
// text, its attempts table fits the window (1400 and 1280 px), and an ended attempt whose SLURM
// state is only the RUNNING last seen says so. Where the time went: one stacked bar per attempt
// adding up to its wall time, the ETTR the API gives (and in the compare table), the Young/Daly
// checkpoint interval. Screenshots go to $ARTIFACTS.
const path = require('path');
const { check, failures, launchChromium } = require('./browser_lib.cjs');
const { decodePng, countColour } = require('./png_pixels.cjs');

const base = process.env.BASE_URL;
const ids = JSON.parse(process.env.FIXTURE_IDS);
const artifacts = process.env.ARTIFACTS;
const XSS = '<script>alert(1)</script>';
const MARKUP_EPISODE = 'ep_<img src=x onerror=alert(2)>';  // run_fixture.h kMarkupEpisode

// One numbering: the run page's attempts table, /api/runs/N/attempts and `baton attempts`
// (CLI_ATTEMPTS, its text) give each attempt the same number (#1 is the first) and the same
// 1-based steps: its first step, its last (the effective range plus the steps redone after it)
// and its warmup range.
async function checkOneNumbering(page, runId) {
  const cli = process.env.CLI_ATTEMPTS.split('\n').map((l) => l.trim().split(/\s+/))
    .filter((t) => /^[0-9]+$/.test(t[0]) && /^[0-9]+\.\./.test(t[3]))
    .map((t) => ({ attempt: Number(t[0]), steps: t[3].split('..').map(Number), warmup: t[5] }));
  const pageRows = await page.$$eval('#attempts-table tbody tr', (rs) => rs.map((r) => {
    const c = [...r.children].map((td) => td.textContent);
    return { attempt: c[0], steps: c[3], warmup: c[5] };
  }));
  const api = await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}/attempts`)).json()).attempts, runId);
  check(cli.length === 3 && pageRows.length === 3 && api.length === 3,
    `the CLI, the page and the API list 3 attempts (${cli.length}, ${pageRows.length}, ${api.length})`);
  for (let i = 0; i < Math.min(cli.length, pageRows.length, api.length); i++) {
    const c = cli[i], p = pageRows[i], a = api[i];
    const m = /^([0-9]+)–([0-9]+)(?: \(\+([0-9]+) redone\))?/.exec(p.steps);
    const redone = m && m[3] ? Number(m[3]) : 0;
    check(p.attempt.startsWith(`#${c.attempt} `) || p.attempt === `#${c.attempt}`, `attempt ${c.attempt}: the page says ${p.attempt}`);
    check(a.attempt === c.attempt, `attempt ${c.attempt}: the API says ${a.attempt}`);
    check(m && Number(m[1]) === c.steps[0] && Number(m[2]) + redone === c.steps[1],
      `attempt ${c.attempt}: the page's steps ${p.steps} are the CLI's ${c.steps.join('..')}`);
    check(a.effective_first_step === c.steps[0] && a.effective_last_step + a.summary.superseded_steps === c.steps[1],
      `attempt ${c.attempt}: the API's steps ${a.effective_first_step}–${a.effective_last_step} are the CLI's`);
    const warmup = c.warmup === '-' ? '–' : c.warmup.replace('..', '–');
    check(p.warmup.split(' ')[0] === warmup, `attempt ${c.attempt}: the page's warmup ${p.warmup} is the CLI's ${c.warmup}`);
    check(c.warmup === '-' ? a.warmup_first_step === null : `${a.warmup_first_step}..${a.warmup_last_step}` === c.warmup,
      `attempt ${c.attempt}: the API's warmup ${a.warmup_first_step}–${a.warmup_last_step} is the CLI's ${c.warmup}`);
  }
}

// Text nodes of the page (but the config and the log, which are data) that hold a JavaScript
// null, undefined or NaN: a value that reached the page as text instead of being left out.
async function strayText(page) {
  return page.evaluate(() => {
    const found = [];
    const walk = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (n.parentElement.closest('#config, #log-text')) continue;
      if (/\b(null|undefined|NaN)\b/.test(n.textContent)) found.push(n.textContent);
    }
    return found;
  });
}

// The attempts table's right edge lies within main's content box and the page does not scroll
// sideways, at the test's viewport and at 1280 px.
async function checkTableFits(page, what) {
  const initial = page.viewportSize();
  for (const width of [initial.width, 1280]) {
    await page.setViewportSize({ width, height: initial.height });
    // The charts follow a new width on their next resize pass: give them a moment to.
    await page.waitForFunction(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth,
      null, { timeout: 3000 }).catch(() => {});
    const m = await page.evaluate(() => {
      const main = document.querySelector('main');
      const box = main.getBoundingClientRect();
      const padRight = parseFloat(getComputedStyle(main).paddingRight);
      const rect = document.getElementById('attempts-table').getBoundingClientRect();
      const cells = [...document.querySelectorAll('#attempts-table tr:first-child > *')];
      return {
        tableRight: rect.right, contentRight: box.right - padRight,
        lastCellRight: cells.length ? cells[cells.length - 1].getBoundingClientRect().right : 0,
        scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth,
      };
    });
    check(m.tableRight <= m.contentRight + 0.5 && m.lastCellRight <= m.contentRight + 0.5 &&
      m.scrollWidth <= m.clientWidth, `${what}: the attempts table fits a ${width} px window (${JSON.stringify(m)})`);
  }
  await page.setViewportSize(initial);
}

(async () => {
  const context = await launchChromium();
  const page = context.pages()[0] || await context.newPage();
  const dialogs = [], errors = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });

  try {
    // ---- runs page
    await page.goto(base + '#/');
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    const names = await page.$$eval('#runs-table a.run-name', (as) => as.map((a) => a.textContent));
    check(names.includes('preempted-demo'), 'runs page lists the demo run');
    check(names.includes(XSS), 'the XSS run name is listed as text');
    check(await page.$$eval('#runs-table script', (s) => s.length) === 0, 'no <script> element inside the runs table');
    const demoRow = await page.$eval(`#runs-table a[href="#/runs/${ids.demo_run_id}"]`,
      (a) => a.closest('tr').textContent);
    check(demoRow.includes('COMPLETED #3') && demoRow.includes('600 / 600'), `demo row shows status, attempt and progress (${demoRow})`);
    const restartsTitle = await page.$eval(`#runs-table a[href="#/runs/${ids.demo_run_id}"]`,
      (a) => a.closest('tr').children[7].getAttribute('title'));
    check(/preempted/.test(restartsTitle || ''), 'restart reasons on hover');
    await page.screenshot({ path: path.join(artifacts, 'runs_page.png'), fullPage: true });

    // ---- run page
    await page.click(`#runs-table a[href="#/runs/${ids.demo_run_id}"]`);
    await page.waitForSelector('body[data-ready="run"]', { timeout: 15000 });
    const lr = await page.evaluate(() => {
      const chart = Chart.getChart('chart-lr');
      const ann = chart.options.plugins.annotation.annotations;
      const logged = chart.data.datasets[0].data.filter((p) => p.y !== null && p.y > 0);
      const canvas = document.getElementById('chart-lr');
      const ctx = canvas.getContext('2d');
      const img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      let painted = 0;
      for (let i = 3; i < img.length; i += 4) if (img[i] > 0) painted++;
      return {
        points: logged.length,
        labels: chart.data.datasets.map((d) => d.label),
        boundaries: Object.entries(ann).filter(([k]) => k.startsWith('boundary')).map(([, a]) => a.label.content),
        warmups: Object.entries(ann).filter(([k]) => k.startsWith('warmup')).map(([, a]) => [a.xMin, a.xMax, a.label.content]),
        painted, size: canvas.width * canvas.height,
      };
    });
    console.log(JSON.stringify(lr));
    check(lr.points > 100, `LR chart has points (${lr.points})`);
    check(lr.labels.includes('expected'), 'LR chart overlays the expected schedule');
    check(lr.painted > lr.size * 0.01, `LR canvas is drawn (${lr.painted} painted pixels)`);
    check(lr.boundaries.includes('#2 preempted → resumed exact @ 300') &&
      lr.boundaries.includes('#3 preempted → resumed weights_only @ 400'), 'attempt boundaries labelled');
    check(lr.warmups.some(([a, b, l]) => a === 0 && b === 100 && l === 'warmup') &&
      lr.warmups.some(([a, b, l]) => a === 400 && b === 419 && l === 'resume warmup'), 'warmup segments shaded');
    const audit = await page.$eval('#audit', (e) => e.textContent);
    check(/19\.8 %/.test(audit) && /100 steps redone/.test(audit) && /4m 0s lost to requeue holds/.test(audit), `audit line (${audit})`);
    const attemptRows = await page.$$eval('#attempts-table tbody tr', (r) => r.length);
    check(attemptRows === 3, 'attempts table has 3 rows');
    await checkOneNumbering(page, ids.demo_run_id);
    check(await page.$$eval('#checkpoints-table tbody tr', (r) => r.length) === 5, 'checkpoints table has 5 rows');
    // Where the time went: one stacked bar per attempt whose parts are the API's buckets, and the
    // ETTR the API gives, as the page shows it.
    const time = await page.evaluate(async (id) => {
      const api = (await (await fetch(`/api/runs/${id}`)).json()).time;
      const chart = Chart.getChart('chart-time');
      const canvas = document.getElementById('chart-time');
      const img = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      let painted = 0;
      for (let i = 3; i < img.length; i += 4) if (img[i] > 0) painted++;
      return {
        api, labels: chart.data.labels, stacked: chart.options.scales.x.stacked && chart.options.scales.y.stacked,
        bars: chart.data.labels.map((_, i) => chart.data.datasets.reduce((sum, d) => sum + d.data[i], 0)),
        productive: (chart.data.datasets.find((d) => d.label === 'productive') || { data: [] }).data,
        painted, size: canvas.width * canvas.height,
        ettr: document.getElementById('ettr').textContent,
        withoutQueue: document.getElementById('ettr-without-queue').textContent,
        advice: document.getElementById('ckpt-advice-value').textContent,
      };
    }, ids.demo_run_id);
    console.log(JSON.stringify({ ...time, api: undefined }));
    check(JSON.stringify(time.labels) === '["#1","#2","#3"]' && time.stacked, `time chart: one stacked bar per attempt (${time.labels})`);
    check(time.bars.every((b, i) => Math.abs(b - time.api.attempts[i].wall_s) <= 0.01 * time.api.attempts[i].wall_s),
      `time chart: each bar adds up to its attempt's wall time (${time.bars} vs ${time.api.attempts.map((a) => a.wall_s)})`);
    check(JSON.stringify(time.productive) === JSON.stringify(time.api.attempts.map((a) => a.buckets.productive)) &&
      time.productive.every((p) => p > 0), `time chart: the productive parts are the API's (${time.productive})`);
    check(time.painted > time.size * 0.02, `time chart is drawn (${time.painted} painted pixels)`);
    check(time.ettr === `ETTR ${(100 * time.api.ettr).toFixed(1)} %` && time.api.ettr > 0 && time.api.ettr < 1,
      `the ETTR shown is the API's (${time.ettr}, API ${time.api.ettr})`);
    check(time.withoutQueue === `${(100 * time.api.ettr_without_queue).toFixed(1)} %`,
      `ETTR without queue (${time.withoutQueue}, API ${time.api.ettr_without_queue})`);
    check(time.api.checkpoint_interval.steps > 0 &&
      time.advice.startsWith(`every ${Math.round(time.api.checkpoint_interval.steps)} steps`),
      `Young/Daly checkpoint interval shown in steps (${time.advice})`);
    const stray = await strayText(page);
    check(stray.length === 0, `no stray null/undefined/NaN text on the run page (${JSON.stringify(stray)})`);
    await checkTableFits(page, 'demo run');
    // The sync pass saw attempt #3 RUNNING while it ran and never after: not a final state.
    const slurmCells = await page.$$eval('#attempts-table tbody td.slurm-end', (tds) => tds.map((td) => td.textContent));
    check(JSON.stringify(slurmCells) === JSON.stringify(['REQUEUED', 'REQUEUED', 'last seen RUNNING (final state not known)']),
      `the completed attempt's SLURM state is labelled as the one last seen, not its final state (${slurmCells})`);
    const ended = await page.$eval('#why-stopped', (e) => e.textContent);
    check(/How it ended/.test(ended) && !ended.includes('SLURM RUNNING') &&
      ended.includes('SLURM last seen RUNNING (final state not known)'), `how it ended: no bare "SLURM RUNNING" (${ended})`);
    for (const id of ['chart-loss', 'chart-grad', 'chart-throughput', 'chart-padding']) {
      const n = await page.evaluate((id) => Chart.getChart(id).data.datasets[0].data.length, id);
      check(n > 100, `${id} has points (${n})`);
    }
    await page.screenshot({ path: path.join(artifacts, 'run_page.png'), fullPage: true });

    // superseded points, shown faint on request
    await page.check('#show-superseded');
    await page.waitForFunction(() => Chart.getChart('chart-loss') &&
      Chart.getChart('chart-loss').data.datasets.some((d) => d.label.endsWith('(superseded)')), null, { timeout: 10000 });
    const faint = await page.evaluate(() => Chart.getChart('chart-loss').data.datasets
      .filter((d) => d.label.endsWith('(superseded)')).map((d) => d.data.filter((p) => p.y !== null).length));
    check(faint.length > 0 && faint[0] === 100, `superseded points shown on request (${faint})`);
    await page.selectOption('#x-axis', 'tokens');
    await page.waitForFunction(() => /axis=tokens/.test(location.hash) && document.body.dataset.ready === 'run',
      null, { timeout: 10000 });
    check(/superseded=1/.test(await page.evaluate(() => location.hash)), 'the view is in the URL (axis and superseded)');
    const xMax = await page.evaluate(() => Chart.getChart('chart-lr').scales.x.max);
    check(xMax > 1e6, `tokens-seen x axis (${xMax})`);
    await page.screenshot({ path: path.join(artifacts, 'run_page_superseded_tokens.png'), fullPage: true });

    // ---- skipped non-finite steps and the trainer's own account of each attempt
    await page.goto(base + `#/runs/${ids.nonfinite_run_id}`);
    await page.waitForSelector('body[data-ready="run"]', { timeout: 15000 });
    const nf = await page.evaluate(() => {
      const loss = Chart.getChart('chart-loss');
      const ann = loss.options.plugins.annotation.annotations;
      const total = loss.data.datasets[0].data.filter((p) => p.y !== null).map((p) => p.x);
      const grad = Chart.getChart('chart-grad').options.plugins.annotation.annotations;
      return {
        boxes: Object.entries(ann).filter(([k]) => k.startsWith('nonfinite')).map(([, a]) => [a.xMin, a.xMax]),
        label: (ann.nonfinite0 || { label: {} }).label.content,
        gradBoxes: Object.keys(grad).filter((k) => k.startsWith('nonfinite')).length,
        lossSteps: total,
        lrBoxes: Object.keys(Chart.getChart('chart-lr').options.plugins.annotation.annotations)
          .filter((k) => k.startsWith('nonfinite')).length,
      };
    });
    console.log(JSON.stringify({ boxes: nf.boxes, label: nf.label, gradBoxes: nf.gradBoxes }));
    check(JSON.stringify(nf.boxes) === JSON.stringify([[15, 16], [42, 45]]), `loss chart marks the skipped steps 15 and 42..44 (${JSON.stringify(nf.boxes)})`);
    check(nf.label === 'skipped (non-finite)', 'the marks are labelled "skipped (non-finite)"');
    check(nf.gradBoxes === 2 && nf.lrBoxes === 0, 'grad-norm chart marks them too, the LR chart does not');
    check(nf.lossSteps.length === 41 && ![15, 42, 43, 44].some((s) => nf.lossSteps.includes(s)),
      `skipped steps have no loss point (${nf.lossSteps.length} points)`);
    const nfRows = await page.$$eval('#nonfinite-table tbody tr', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    check(nfRows.length === 4, `skipped-steps table lists 4 steps (${nfRows.length})`);
    check(nfRows.length > 0 && nfRows[0][0] === '16' && nfRows[0][1] === '#1' && nfRows[0][3] === 'NaN/Inf' &&
      nfRows[0][4] === `ep_000003, ${MARKUP_EPISODE}`, `first skipped step with its episode ids as text (${nfRows[0]})`);
    check(nfRows.length > 1 && nfRows[1][0] === '43' && nfRows[1][2] === 'NaN/Inf', 'a NaN loss is shown as NaN/Inf');
    const nfAudit = await page.$eval('#audit', (e) => e.textContent);
    check(/4 steps skipped \(non-finite\)/.test(nfAudit), `audit counts the skipped steps (${nfAudit})`);
    const ends = await page.$$eval('#attempts-table tbody tr', (rs) => rs.map((r) => ({
      trainer: r.querySelector('td.trainer-end').textContent,
      message: r.querySelector('td.trainer-message').textContent,
      text: r.textContent,
    })));
    check(ends.length === 2, 'two attempts');
    check(ends.length === 2 && ends[0].trainer === 'no segment_end · exit 139' && ends[0].message === '–',
      `a killed attempt says it left no segment_end (${ends[0] && ends[0].trainer})`);
    check(ends.length === 2 && ends[1].trainer === 'diverged · exit 79' && /diverged/.test(ends[1].text),
      `the diverged attempt shows the trainer's reason and exit code (${ends[1] && ends[1].trainer})`);
    check(ends.length === 2 && ends[1].message.startsWith('3 consecutive steps with a NaN/Inf loss') &&
      ends[1].message.endsWith(`episodes ep_000012, ${MARKUP_EPISODE}`), `the trainer's message verbatim (${ends[1] && ends[1].message})`);
    check(await page.$$eval('main img', (e) => e.length) === 0, 'markup in messages and episode ids is not parsed (no <img>)');
    await checkTableFits(page, 'run with the trainer\'s messages');
    await page.screenshot({ path: path.join(artifacts, 'run_page_nonfinite.png'), fullPage: true });

    // ---- why it stopped, and the job log's tail (the failed nonfinite-demo run)
    const why = await page.$eval('#why-stopped', (e) => e.textContent);
    check(/Why it stopped/.test(why) && /diverged/.test(why) && /exit 79/.test(why) && why.includes(MARKUP_EPISODE),
      `why it stopped: reason, exit code and the trainer's message (${why})`);
    const killed = await page.$$eval('#attempts-table tbody tr', (rs) => rs[0].textContent);
    check(/SEGV/.test(killed), `the killed attempt's signal from exit 139 (${killed})`);
    await page.click('#attempts-table tbody tr:nth-child(2) button.log-button');
    await page.waitForFunction(() => /log=2/.test(location.hash) && document.body.dataset.ready === 'run' &&
      document.getElementById('log-text'), null, { timeout: 10000 });
    const log = await page.evaluate(() => ({
      text: document.getElementById('log-text').textContent,
      children: document.getElementById('log-text').children.length,
      older: !document.getElementById('log-older').disabled,
      meta: document.getElementById('log-meta').textContent,
    }));
    check(log.text.trimEnd().endsWith('baton launch: trainer exited 79 (diverged): failing the run') &&
      log.text.includes(`baton-train: error: 3 consecutive steps`) && log.text.includes(MARKUP_EPISODE),
      'the log viewer shows the tail with the trainer\'s error line');
    check(log.children === 0 && log.text.includes('<b>ok</b>'), 'log text is text (no element parsed from it)');
    check(log.older && /logs\/3003\.out/.test(log.meta), `the log pages backwards (${log.meta})`);
    const logShot = decodePng(await page.locator('#log-text').screenshot({ path: path.join(artifacts, 'log_tail.png') }));
    const lightText = countColour(logShot, [230, 230, 230], 40), darkPanel = countColour(logShot, [17, 20, 24], 8);
    check(darkPanel > logShot.width * logShot.height * 0.5 && lightText > 500,
      `log screenshot: text drawn on the panel (${lightText} text pixels, ${darkPanel} panel pixels)`);
    const before = log.text.length;
    await page.click('#log-older');
    await page.waitForFunction((n) => document.getElementById('log-text').textContent.length > n, before, { timeout: 10000 });
    check(true, 'older log page prepended');
    const escape = await page.evaluate(async (id) => (await fetch(`/api/runs/${id}/log?attempt=../../etc`)).status, ids.nonfinite_run_id);
    check(escape === 400, `a log request naming a path is refused (${escape})`);
    await page.screenshot({ path: path.join(artifacts, 'run_page_failed_log.png'), fullPage: true });

    // ---- compare view with 3 runs: colours, boundaries, config diff, stable URL
    const cmp = [ids.demo_run_id, ...ids.compare_run_ids];
    await page.goto(base + `#/compare?runs=${cmp.join(',')}&axis=step`);
    await page.waitForSelector('body[data-ready="compare"]', { timeout: 15000 });
    const compare = await page.evaluate(() => {
      const c = Chart.getChart('compare-loss');
      const ann = c.options.plugins.annotation.annotations;
      return {
        datasets: c.data.datasets.map((d) => [d.label, d.borderColor, d.data.length]),
        boundaries: Object.values(ann).filter((a) => a.type === 'line').map((a) => a.label.content),
        boxes: Object.values(ann).filter((a) => a.type === 'box').length,
        diff: [...document.querySelectorAll('#config-diff td.config-key')].map((td) => td.textContent),
      };
    });
    console.log(JSON.stringify(compare));
    check(compare.datasets.length === 3 && compare.datasets.every(([, , n]) => n > 100), 'compare: 3 runs overlaid on the loss chart');
    check(compare.boundaries.includes('preempted-demo #2') && compare.boundaries.includes('compare-lr-high #3'),
      `compare: each run's attempt boundaries (${compare.boundaries})`);
    check(compare.boxes >= 3, `compare: warmup ranges shaded (${compare.boxes})`);
    const cmpEttr = await page.$$eval('#compare-runs td.ettr', (tds) => tds.map((td) => td.textContent));
    const demoEttr = (await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}`)).json()).time.ettr, ids.demo_run_id));
    check(cmpEttr.length === 3 && cmpEttr[0] === `${(100 * demoEttr).toFixed(1)} %`, `compare: each run's ETTR (${cmpEttr})`);
    check(compare.diff.includes('optim.lr') && compare.diff.includes('run.name') && !compare.diff.includes('data.path'),
      `compare: config diff lists only differing keys (${compare.diff})`);
    const cmpShot = decodePng(await page.locator('#compare-loss').screenshot({ path: path.join(artifacts, 'compare_loss.png') }));
    const colours = { blue: [31, 119, 180], red: [214, 39, 40], green: [44, 160, 44] };
    const counts = Object.fromEntries(Object.entries(colours).map(([k, c]) => [k, countColour(cmpShot, c, 30)]));
    check(Object.values(counts).every((n) => n > 150), `compare screenshot has each run's colour (${JSON.stringify(counts)})`);
    await page.screenshot({ path: path.join(artifacts, 'compare.png'), fullPage: true });
    await page.selectOption('#compare-axis', 'tokens');
    await page.waitForFunction(() => /axis=tokens/.test(location.hash) && document.body.dataset.ready === 'compare', null, { timeout: 10000 });
    const sharedUrl = page.url();
    const page2 = await context.newPage();
    await page2.goto(sharedUrl);
    await page2.waitForSelector('body[data-ready="compare"]', { timeout: 15000 });
    const xTitle = await page2.evaluate(() => Chart.getChart('compare-loss').options.scales.x.title.text);
    check(xTitle === 'tokens seen', `a shared compare URL opens the same view (${xTitle})`);
    await page2.close();

    // ---- runs page filters and selection for compare
    await page.goto(base + '#/?status=FAILED');
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    const failedNames = await page.$$eval('#runs-table a.run-name', (as) => as.map((a) => a.textContent));
    check(failedNames.length === 1 && failedNames[0] === 'nonfinite-demo', `status filter (${failedNames})`);
    await page.goto(base + '#/?partition=a100&name=LR-HIGH');
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    const a100 = await page.$$eval('#runs-table a.run-name', (as) => as.map((a) => a.textContent));
    check(a100.length === 1 && a100[0] === 'compare-lr-high', `partition and name filters (${a100})`);
    await page.goto(base + '#/?to=2000-01-01');
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    check(await page.$$eval('#runs-table tbody tr', (r) => r.length) === 0, 'date filter');
    await page.goto(base + '#/');
    await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
    for (const id of cmp) await page.check(`input.select-run[data-run="${id}"]`);
    await page.click('#compare-selected');
    await page.waitForSelector('body[data-ready="compare"]', { timeout: 15000 });
    check(await page.evaluate(() => Chart.getChart('compare-loss').data.datasets.length) === 3, 'runs selected in the table open in compare');

    // ---- a run with ~1 M step rows loads its page in under 1 s
    if (ids.big_run_id) {
      await page.goto(base + '#/');
      await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
      const times = [];
      for (let i = 0; i < 3; i++) {
        await page.evaluate(() => { location.hash = '#/'; });
        await page.waitForSelector('body[data-ready="runs"]', { timeout: 15000 });
        const t0 = Date.now();
        await page.evaluate((id) => { location.hash = `#/runs/${id}`; }, ids.big_run_id);
        await page.waitForSelector('body[data-ready="run"]', { timeout: 30000 });
        times.push(Date.now() - t0);
      }
      const rows = await page.evaluate(() => Chart.getChart('chart-loss').data.datasets[0].data.length);
      times.sort((a, b) => a - b);
      console.log(`1M-row run page load (ms): ${times}`);
      check(times[1] < 1000 && rows > 1000, `the ~1M-row run's page loads in under 1 s (median ${times[1]} ms, ${rows} points)`);
      await page.screenshot({ path: path.join(artifacts, 'run_page_million.png'), fullPage: true });
    }

    // ---- the XSS run's own page
    await page.goto(base + `#/runs/${ids.xss_run_id}`);
    await page.waitForSelector('body[data-ready="run"]', { timeout: 15000 });
    check(await page.$eval('#run-name', (e) => e.textContent) === XSS, 'XSS run name rendered as text on its page');
    check(await page.$$eval('main script', (s) => s.length) === 0, 'no injected <script> on the run page');
    const strayLive = await strayText(page);
    check(strayLive.length === 0, `no stray null/undefined/NaN text on a live run's page (${JSON.stringify(strayLive)})`);

    // ---- unknown run: the error is shown, not a blank page
    await page.goto(base + '#/runs/987654');
    await page.waitForSelector('body[data-ready="error"]', { timeout: 15000 });
    check(/404/.test(await page.$eval('#error', (e) => e.textContent)), 'unknown run shows a 404');
    errors.splice(0, errors.length, ...errors.filter((e) => !/status of (404|400)/.test(e)));  // the expected failed fetches
  } catch (e) {
    failures.push(`exception: ${e.stack || e}`);
    await page.screenshot({ path: path.join(artifacts, 'failure.png'), fullPage: true }).catch(() => {});
  }
  check(dialogs.length === 0, `no dialogs opened (${dialogs})`);
  check(errors.length === 0, `no page errors (${errors.join(' | ')})`);
  await context.close();
  console.log(failures.length ? `browser test: ${failures.length} failed` : 'browser test: all passed');
  console.log(`screenshots: ${artifacts}`);
  process.exit(failures.length ? 1 : 0);
})();
