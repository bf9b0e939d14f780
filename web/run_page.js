// One run: audit line, charts (LR with the expected schedule, warmup shading and attempt
// boundaries; losses; grad norm; throughput; padding), the attempts table with per-attempt
// summaries and how the trainer ended each one, the steps the trainer skipped as non-finite,
// checkpoints and the resolved config. Superseded steps are hidden unless asked for. Messages
// and episode ids come from the trainer and the data: text nodes only (dom.js).
import { getJson } from './api.js';
import { el, clear, table } from './dom.js';
import * as fmt from './format.js';
import { AXES, points, stepMapper, annotations, nonfiniteMarks, lineChart } from './charts.js';
import { statusBadge } from './runs_page.js';

const MAX_POINTS = 2000;  // per series: the server downsamples (min/max-preserving)
const REFRESH_MS = 10000; // while the run is live
const KEYS = ['lr', 'expected_lr', 'loss', 'loss_video', 'loss_action', 'grad_norm',
  'tokens_per_s', 'step_time_s', 'padding'];
const C = {
  lr: 'rgb(31, 119, 180)', expected: 'rgb(40, 40, 40)', loss: 'rgb(20, 20, 20)',
  video: 'rgb(44, 160, 44)', action: 'rgb(214, 39, 40)', grad: 'rgb(148, 103, 189)',
  tps: 'rgb(23, 190, 207)', sps: 'rgb(255, 127, 14)', pad: 'rgb(140, 86, 75)',
};

let charts = [];
function destroyCharts() { charts.forEach((c) => c.destroy()); charts = []; }

function auditLine(run) {
  const a = run.audit;
  const expected = a.expected_warmup_steps !== null && a.effective_steps > 0
    ? ` (expected ${fmt.pct(a.expected_warmup_steps / a.effective_steps)})` : '';
  return el('p', { id: 'audit', class: 'audit' },
    el('strong', {}, 'Audit: '),
    `${fmt.pct(a.warmup_fraction)} of ${fmt.int(a.effective_steps)} steps under warmup${expected}`,
    ' · ', `${fmt.int(a.steps_redone)} steps redone (${fmt.duration(a.redone_compute_s)} of compute)`,
    ' · ', `${fmt.duration(a.requeue_hold_s)} lost to requeue holds`,
    ' · ', `${a.attempts} attempts`,
    a.nonfinite_steps ? el('span', { class: 'skipped' }, ' · ', `${fmt.int(a.nonfinite_steps)} steps skipped (non-finite)`) : null);
}

// How the trainer itself ended the attempt (segment_end): its reason and exit code; an attempt
// that ended without one (killed, crashed) says so.
function trainerEnd(a) {
  if (a.trainer_end_reason) {
    return a.trainer_exit_code === null ? a.trainer_end_reason : `${a.trainer_end_reason} · exit ${a.trainer_exit_code}`;
  }
  if (!a.ended_at) return '–';
  return a.exit_code === null ? 'no segment_end' : `no segment_end · exit ${a.exit_code}`;
}

function attemptsTable(attempts) {
  const rows = attempts.map((a) => [
    `#${a.attempt}`, a.job_id, String(a.restart_count), a.nodes || '–',
    a.effective_first_step === null ? '–' : `${a.effective_first_step}–${a.effective_last_step}` +
      (a.summary.superseded_steps ? ` (+${a.summary.superseded_steps} redone)` : ''),
    a.resume_mode ?? '–',
    a.warmup_from === null ? '–' : `${a.warmup_from}–${a.warmup_until} (${a.warmup_kind.replace('_', ' ')})`,
    a.end_reason ?? (a.ended_at ? '–' : 'running'),
    el('td', { class: 'trainer-end' }, trainerEnd(a)),
    el('td', { class: 'trainer-message' }, a.trainer_message ?? '–'),
    a.summary.nonfinite_steps ? el('td', { class: 'num skipped' }, fmt.int(a.summary.nonfinite_steps)) : '–',
    fmt.duration(a.duration_s),
    fmt.num(a.summary.tokens_per_s), fmt.num(a.summary.s_per_step), fmt.pct(a.summary.padding_waste),
  ]);
  return table(['#', 'Job', 'Restart', 'Nodes', 'Steps (effective)', 'Resume', 'Warmup', 'End',
    'Trainer', 'Message', 'Skipped', 'Duration', 'tokens/s', 's/step', 'Padding'], rows,
  { id: 'attempts-table', class: 'data' });
}

// The steps the trainer did not apply (NaN/Inf loss or gradient norm) with their episodes; only
// when there are any. The server lists the first ones; the count is exact.
function nonfiniteSection(nf) {
  if (!nf || (!nf.steps && !nf.superseded)) return [];
  const listed = nf.listed.length < nf.steps ? ` (the first ${nf.listed.length} listed)` : '';
  const redone = nf.superseded ? `, ${fmt.int(nf.superseded)} more in steps redone after a resume` : '';
  return [
    el('h2', {}, 'Skipped steps (non-finite)'),
    el('p', { id: 'nonfinite-note', class: 'meta' },
      `${fmt.int(nf.steps)} steps not applied: their loss or gradient norm was NaN/Inf, so weights and ` +
      `optimizer state were left as they were${redone}${listed}.`),
    table(['Step', 'Attempt', 'Loss', 'Grad norm', 'Episodes'], nf.listed.map((s) => [
      fmt.int(s.step), `#${s.attempt}`, s.loss === null ? 'NaN/Inf' : fmt.num(s.loss),
      s.grad_norm === null ? 'NaN/Inf' : fmt.num(s.grad_norm),
      el('td', { class: 'episodes' }, s.episodes.length ? s.episodes.join(', ') : '–'),
    ]), { id: 'nonfinite-table', class: 'data' }),
  ];
}

function checkpointsTable(cps) {
  return table(['Step', 'Size', 'Valid', 'Save time', 'Reason', 'Written'],
    cps.map((c) => [fmt.int(c.step), fmt.bytes(c.bytes), c.valid ? 'yes' : 'no',
      c.seconds === null ? '–' : `${fmt.num(c.seconds, 3)} s`, c.reason, fmt.time(c.time)]),
    { id: 'checkpoints-table', class: 'data' });
}

function chartBox(id, title) {
  const canvas = el('canvas', { id });
  return { canvas, box: el('section', { class: 'chart' }, el('h3', {}, title), el('div', { class: 'canvas-wrap' }, canvas)) };
}

function renderCharts(grid, run, series, view) {
  destroyCharts();
  clear(grid);
  const s = series.series, faint = series.superseded || null;
  const axis = view.axis;
  const toX = stepMapper(s.lr, axis);
  const boundaries = annotations(run.segments, toX, { fullLabels: false, shade: false });
  const skipped = { ...boundaries, ...nonfiniteMarks(series.nonfinite && series.nonfinite.ranges, toX) };
  const ds = (key, label, color, extra = {}) => {
    const out = [{ label, data: points(s[key], axis), color, ...extra }];
    if (faint && faint[key] && faint[key].step.length) {
      out.push({ label: `${label} (superseded)`, data: points(faint[key], axis, true), color, faint: true, yAxisID: extra.yAxisID });
    }
    return out;
  };
  const add = (id, title, datasets, opts = {}) => {
    const { canvas, box } = chartBox(id, title);
    grid.appendChild(box);
    charts.push(lineChart(canvas, { axis, datasets, annotation: boundaries, ...opts }));
  };
  add('chart-lr', 'Learning rate: logged vs expected (no re-warmup)', [
    ...ds('lr', 'lr (logged)', C.lr),
    { label: 'expected', data: points(s.expected_lr, axis), color: C.expected, dashed: true },
  ], { annotation: annotations(run.segments, toX, { fullLabels: true, shade: true }), yTitle: 'lr' });
  add('chart-loss', 'Loss', [...ds('loss', 'total', C.loss), ...ds('loss_video', 'video', C.video),
    ...ds('loss_action', 'action', C.action)], { yTitle: 'loss', annotation: skipped });
  add('chart-grad', 'Gradient norm', ds('grad_norm', 'grad norm', C.grad), { yTitle: 'norm', annotation: skipped });
  add('chart-throughput', 'Throughput', [...ds('tokens_per_s', 'tokens/s', C.tps),
    ...ds('step_time_s', 's/step', C.sps, { yAxisID: 'y2' })], { yTitle: 'tokens/s', y2Title: 's/step' });
  add('chart-padding', 'Padding waste per step', ds('padding', 'padded / all tokens', C.pad), { yTitle: 'fraction' });
}

export async function showRun(root, id, isCurrent) {
  const view = { axis: 'step', faint: false };
  const [run, attempts, checkpoints] = await Promise.all([
    getJson(`runs/${id}`), getJson(`runs/${id}/attempts`, { limit: 1000 }),
    getJson(`runs/${id}/checkpoints`, { limit: 1000 })]);
  if (!isCurrent()) return;
  const grid = el('div', { class: 'charts' });
  const loadSeries = () => getJson(`runs/${id}/series`, { keys: KEYS.join(','), max_points: MAX_POINTS, superseded: view.faint ? 1 : 0 });
  let series = await loadSeries();
  if (!isCurrent()) return;

  const axisSelect = el('select', { id: 'x-axis', onchange: (e) => { view.axis = e.target.value; renderCharts(grid, run, series, view); } },
    Object.entries(AXES).map(([k, a]) => el('option', { value: k }, a.label)));
  const faintToggle = el('input', { type: 'checkbox', id: 'show-superseded', onchange: async (e) => {
    view.faint = e.target.checked;
    series = await loadSeries();
    renderCharts(grid, run, series, view);
  } });
  const target = run.target_steps ? ` / ${fmt.int(run.target_steps)}` : '';
  clear(root).append(
    el('p', {}, el('a', { href: '#/' }, '‹ all runs')),
    el('h1', {}, el('span', { id: 'run-name' }, run.name), ' ', statusBadge(run)),
    el('p', { class: 'meta' }, `run ${run.id} · job ${run.job_id ?? '–'} · step ${fmt.int(run.steps_done)}${target}` +
      ` · wall ${fmt.duration(run.wall_s)} · created ${fmt.time(run.created_at)}` + (run.reason ? ` · ${run.reason}` : '')),
    auditLine(run),
    el('div', { class: 'controls' }, el('label', {}, 'x axis ', axisSelect),
      el('label', {}, faintToggle, ` show superseded steps (${fmt.int(run.audit.steps_redone)} redone after resumes)`)),
    grid,
    el('h2', {}, 'Attempts'), attemptsTable(attempts.attempts),
    ...nonfiniteSection(run.nonfinite),
    el('h2', {}, 'Checkpoints'), checkpointsTable(checkpoints.checkpoints),
    el('h2', {}, 'Config'), el('pre', { id: 'config', class: 'config' }, run.config));
  renderCharts(grid, run, series, view);
  document.body.dataset.ready = 'run';
  document.getElementById('refresh-note').textContent = run.live ? 'live: refreshing every 10 s' : '';
  if (run.live) setTimeout(() => { if (isCurrent()) showRun(root, id, isCurrent).catch(() => {}); }, REFRESH_MS);
}

export { destroyCharts };
