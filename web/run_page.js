// One run: why it stopped, audit line, ETTR, charts (LR with the expected schedule, warmup shading
// and attempt boundaries; losses with the held-out eval loss beside them (run_evals.js); grad norm; throughput; padding; the micro-step profile), where
// the time went per attempt (stacked bars, time_buckets.js), the attempts table with per-attempt
// summaries and every witness of how each one ended (launcher, trainer, signal, SLURM) and its log,
// the steps the trainer skipped as non-finite, checkpoints and the resolved config; its owner,
// cancel and resume buttons and the audit of those actions (run_actions.js). The view (x
// axis, superseded steps, zoomed step range, open log) is in the URL:
// #/runs/<id>?axis=tokens&superseded=1&from=100&to=500&log=2. Messages, log text and episode ids
// come from the trainer and the data: text nodes only (dom.js).
import { getJson, apiUrl } from './api.js';
import { showLog } from './log_viewer.js';
import { el, clear, fill, table } from './dom.js';
import * as fmt from './format.js';
import { AXES, points, stepMapper, annotations, nonfiniteMarks, lineChart } from './charts.js';
import { statusBadge } from './runs_page.js';
import { ettrLine, checkpointAdvice, timeChartBox, renderTimeChart } from './time_buckets.js';
import { actionsSection } from './run_actions.js';
import { incidentsSection } from './run_incidents.js';
import { evalOverlay, evalDatasets, evalsSection } from './run_evals.js';

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

// The stop save: what submit predicted against the preemption grace, and what the stop saves took.
function stopSaveLine(run) {
  const s = run.stop_save;
  if (!s || (s.predicted_s === null && s.measured.length === 0)) return null;
  const parts = [el('strong', {}, 'Stop save: ')];
  if (s.predicted_s !== null) {
    parts.push(`predicted ${s.predicted_s.toFixed(1)} s (${(s.bytes_per_rank / 1e9).toFixed(2)} GB per rank at ${s.write_gbps.toFixed(2)} GB/s, ${s.write_source})`,
      ' · ', `grace ${s.grace_s.toFixed(0)} s (${s.grace_source})`, ' · ',
      el('span', { class: s.fits ? '' : 'skipped' }, s.fits ? 'fits' : 'does not fit with the margin'));
  } else {
    parts.push('not predicted at submit');
  }
  const measured = s.measured.slice(0, 3).map((m) => `${m.seconds === null ? '?' : m.seconds.toFixed(2)} s at step ${fmt.int(m.step)}`);
  parts.push(' · ', measured.length ? `measured ${measured.join(', ')}` : 'no stop save yet');
  return el('p', { id: 'stop-save', class: 'audit' }, ...parts);
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

// SLURM's account: state, Reason (when it says more than None) and ExitCode. The state of an
// ended attempt is SLURM's final one once the sync pass has learnt it; until then (and for good
// once SLURM has forgotten the job) it is only the state last seen while the attempt ran, and
// says so (slurm_state_kind 'last_seen').
function slurmEnd(a) {
  if (!a.slurm_state) return '–';
  const reason = a.slurm_reason && a.slurm_reason !== 'None' ? ` (${a.slurm_reason})` : '';
  const text = `${a.slurm_state}${reason}` + (a.slurm_exit_code ? ` · ExitCode ${a.slurm_exit_code}` : '');
  return a.slurm_state_kind === 'last_seen' ? `last seen ${text} (final state not known)` : text;
}
const LAST_SEEN_TIP = 'The state the sync pass last saw while the attempt ran. SLURM keeps a ' +
  'finished job only for MinJobAge (and sacct needs an accounting daemon), so its final state ' +
  'was not learnt.';

// The requeue hold after the attempt, when baton watch/serve released it (or SLURM refused).
function holdNote(a) {
  if (a.hold_released_at !== null && a.ended_at !== null) {
    return el('span', { class: 'hold-released' }, ` · hold released after ${fmt.duration(a.hold_released_at - a.ended_at)}`);
  }
  return a.hold_release_error ? el('span', { class: 'skipped' }, ' · hold release refused') : null;
}

// One line with every witness of how the attempt ended (the run page's "why it stopped").
function evidenceLine(a) {
  const parts = [`#${a.attempt} ${a.end_reason ?? (a.ended_at ? 'ended' : 'running')}`];
  if (a.exit_code !== null) parts.push(`exit ${a.exit_code}`);
  if (a.signal) parts.push(`signal ${a.signal}`);
  parts.push(`trainer: ${trainerEnd(a)}`);
  if (a.slurm_state) parts.push(`SLURM ${slurmEnd(a)}`);
  return parts.join(' · ');
}

function whyItStopped(run, attempts, openLog) {
  const last = attempts[attempts.length - 1];
  if (!last || run.status === 'RUNNING' || run.status === 'PENDING') return null;
  return el('div', { id: 'why-stopped', class: `why why-${run.status.toLowerCase()}` },
    el('strong', {}, run.status === 'COMPLETED' ? 'How it ended: ' : 'Why it stopped: '),
    evidenceLine(last),
    last.trainer_message ? el('div', { class: 'trainer-message', id: 'why-message' }, last.trainer_message) : null,
    last.log ? el('button', { class: 'log-button', onclick: () => openLog(last.attempt) }, `log of #${last.attempt}`) : null);
}

// Text with a line-break opportunity after each `sep` (node lists, paths), so a cell wraps there
// rather than inside a name.
function breakable(text, sep) {
  return text.split(sep).flatMap((part, i, all) => (i < all.length - 1 ? [part + sep, el('wbr')] : [part]));
}

// Job id and restart count; a restart of the trainer inside the job adds its sequence number
// and cause ("3003.0.1 · in-job #1 (hang)"), a hang its stale ranks in the tooltip.
function jobRestartCell(a) {
  const seq = a.in_job_seq || 0;
  const hang = a.hang_detected_at !== null && a.hang_detected_at !== undefined
    ? `; hang: stale rank(s) ${a.hang_stale_ranks}` : '';
  return el('td', { class: 'job-restart', title: `job ${a.job_id}, restart ${a.restart_count}` +
      (seq ? `, in-job restart ${seq} after a ${a.restart_cause}` : '') + hang },
    `${a.job_id}.${a.restart_count}` + (seq ? `.${seq}` : ''),
    seq ? el('span', { class: 'in-job-restart' }, ` · in-job #${seq} (${a.restart_cause})`) : null);
}

// One row per attempt. Step ranges are the API's step numbers (1-based, as the CLI's), shown as
// they come. Its number carries the log button, its step range the count of steps
// skipped as non-finite: fewer columns, so the table fits the page (app.css).
function attemptsTable(attempts, openLog) {
  const rows = attempts.map((a) => [
    el('td', { class: 'nowrap' }, `#${a.attempt}`, a.log
      ? [' ', el('button', { class: 'log-button', dataset: { attempt: a.attempt }, onclick: () => openLog(a.attempt) }, 'log')]
      : null),
    jobRestartCell(a),
    el('td', { class: 'nodes' }, a.nodes ? breakable(a.nodes, ',') : '–'),
    el('td', {}, a.effective_first_step === null ? '–' : `${a.effective_first_step}–${a.effective_last_step}` +
      (a.summary.superseded_steps ? ` (+${a.summary.superseded_steps} redone)` : ''),
    a.summary.nonfinite_steps
      ? el('span', { class: 'skipped' }, ` · ${fmt.int(a.summary.nonfinite_steps)} skipped`) : null),
    a.resume_mode ?? '–',
    a.warmup_first_step === null ? '–' : `${a.warmup_first_step}–${a.warmup_last_step} (${a.warmup_kind.replace('_', ' ')})`,
    el('td', { class: 'end', title: a.hold_release_error || null }, a.end_reason ?? (a.ended_at ? '–' : 'running'),
      holdNote(a)),
    el('td', { class: 'trainer-end' }, trainerEnd(a)),
    el('td', { class: a.trainer_message ? 'trainer-message' : 'trainer-message none' }, a.trainer_message ?? '–'),
    a.signal ?? '–',
    el('td', { class: 'slurm-end', title: a.slurm_state_kind === 'last_seen' ? LAST_SEEN_TIP : null }, slurmEnd(a)),
    el('td', { class: 'init-from' }, a.init_from || a.checkpoint ? breakable(a.init_from || a.checkpoint, '/') : '–'),
    fmt.duration(a.duration_s),
    fmt.num(a.summary.tokens_per_s), fmt.num(a.summary.s_per_step), fmt.pct(a.summary.padding_waste),
  ]);
  return table(['# · log', 'Job.restart', 'Nodes', 'Steps (effective)', 'Resume', 'Warmup', 'End',
    'Trainer', 'Message', 'Signal', 'SLURM', 'Weights from', 'Duration', 'tokens/s', 's/step',
    'Padding'], rows,
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
      fmt.int(s.step_number), `#${s.attempt}`, s.loss === null ? 'NaN/Inf' : fmt.num(s.loss),
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

function renderCharts(grid, run, series, view, profile) {
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
    ...ds('loss_action', 'action', C.action), ...evalOverlay(run.evals, toX)], { yTitle: 'loss', annotation: skipped });
  if (run.evals && run.evals.length) {
    add('chart-eval', 'Eval loss (held-out, per evaluated checkpoint)', evalDatasets(run.evals, toX), { yTitle: 'loss' });
  }
  add('chart-grad', 'Gradient norm', ds('grad_norm', 'grad norm', C.grad), { yTitle: 'norm', annotation: skipped });
  add('chart-throughput', 'Throughput', [...ds('tokens_per_s', 'tokens/s', C.tps),
    ...ds('step_time_s', 's/step', C.sps, { yAxisID: 'y2' })], { yTitle: 'tokens/s', y2Title: 's/step' });
  add('chart-padding', 'Padding waste per step', ds('padding', 'padded / all tokens', C.pad), { yTitle: 'fraction' });
  if (profile && profile.steps.length) {
    // Micro-step profile on the step axis only (its steps are a sample, not the series).
    const at = (f) => profile.steps.map((p) => ({ x: p.step, y: f(p) }));
    add('chart-profile', 'Profile: forward+backward tokens/s, peak memory, shapes per step', [
      { label: 'tokens/s (fwd+bwd)', data: at((p) => p.tokens_per_s), color: C.tps },
      { label: 'peak memory (GiB)', data: at((p) => p.peak_bytes / 2 ** 30), color: C.grad, yAxisID: 'y2' },
      { label: 'distinct shapes', data: at((p) => p.shapes), color: C.pad, dashed: true, yAxisID: 'y2' },
    ], { axis: 'step', annotation: {}, yTitle: 'tokens/s', y2Title: 'GiB · shapes' });
  }
}

function profileTable(profile) {
  if (!profile || !profile.attempts.length) {
    return el('p', { class: 'muted', id: 'profile-note' }, 'No micro-step profile (train.profile is 0).');
  }
  return table(['#', 'Steps profiled', 'Micro-steps', 'Tokens', 'tokens/s (fwd+bwd)', 'Peak memory', 'Distinct shapes', 'MFU'],
    profile.attempts.map((a) => [`#${a.attempt}`, fmt.int(a.steps), fmt.int(a.micro_steps), fmt.int(a.tokens),
      fmt.num(a.tokens_per_s), fmt.bytes(a.peak_bytes), fmt.int(a.shapes),
      el('td', { title: a.mfu === null ? 'needs train.device_peak_tflops in the config' : 'model FLOP/s (linear layers, fwd+bwd) / train.device_peak_tflops' }, a.mfu === null ? '–' : fmt.pct(a.mfu))]),
    { id: 'profile-table', class: 'data' });
}

export async function showRun(root, id, state, isCurrent) {
  const view = {
    axis: ['step', 'tokens', 'wall'].includes(state.axis) ? state.axis : 'step',
    faint: state.superseded === '1',
    from: state.from !== undefined && state.from !== '' ? Number(state.from) : null,
    to: state.to !== undefined && state.to !== '' ? Number(state.to) : null,
  };
  const go = (patch) => {
    const next = { axis: view.axis, superseded: view.faint ? '1' : '0', from: view.from, to: view.to, log: state.log, ...patch };
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(next)) if (v !== null && v !== undefined && v !== '') q.set(k, v);
    location.hash = `#/runs/${id}?${q}`;
  };
  const seriesQuery = { keys: KEYS.join(','), max_points: MAX_POINTS, superseded: view.faint ? 1 : 0,
    from: view.from ?? undefined, to: view.to ?? undefined };
  const [run, attempts, checkpoints, series, profile] = await Promise.all([
    getJson(`runs/${id}`), getJson(`runs/${id}/attempts`, { limit: 1000 }),
    getJson(`runs/${id}/checkpoints`, { limit: 1000 }),
    getJson(`runs/${id}/series`, seriesQuery), getJson(`runs/${id}/profile`)]);
  if (!isCurrent()) return;
  const grid = el('div', { class: 'charts' });
  const logBox = el('section', { id: 'log-viewer', class: 'log-viewer' });
  const openLog = (n) => go({ log: n });

  const axisSelect = el('select', { id: 'x-axis', onchange: (e) => go({ axis: e.target.value }) },
    Object.entries(AXES).map(([k, a]) => el('option', { value: k, selected: k === view.axis }, a.label)));
  const faintToggle = el('input', { type: 'checkbox', id: 'show-superseded', checked: view.faint,
    onchange: (e) => go({ superseded: e.target.checked ? '1' : '0' }) });
  const fromInput = el('input', { type: 'number', id: 'zoom-from', min: 0, placeholder: 'first', value: view.from ?? '' });
  const toInput = el('input', { type: 'number', id: 'zoom-to', min: 0, placeholder: 'last', value: view.to ?? '' });
  const zoom = el('span', { class: 'zoom' }, 'steps ', fromInput, '–', toInput,
    el('button', { id: 'zoom-apply', onclick: () => go({ from: fromInput.value, to: toInput.value }) }, 'zoom'),
    el('button', { id: 'zoom-reset', onclick: () => go({ from: null, to: null }) }, 'all'));
  const csv = el('a', { id: 'series-csv', href: apiUrl(`runs/${id}/series`, { ...seriesQuery, format: 'csv' }), download: `run-${id}-series.csv` }, 'series as CSV');
  const target = run.target_steps ? ` / ${fmt.int(run.target_steps)}` : '';
  const zoomNote = view.from !== null || view.to !== null
    ? el('p', { class: 'meta', id: 'zoom-note' }, `zoomed to steps ${view.from ?? 0}–${view.to ?? 'end'}: ` +
      `${fmt.int(series.rows)} steps, ${series.rows <= MAX_POINTS ? 'every one shown' : 'min/max of each bucket shown'}`)
    : null;
  const timeBox = timeChartBox();
  const actions = await actionsSection(run, () => { if (isCurrent()) showRun(root, id, state, isCurrent).catch(() => {}); });
  const incidents = await incidentsSection(run);
  if (!isCurrent()) return;
  fill(root,
    el('p', {}, el('a', { href: '#/' }, '‹ all runs')),
    el('h1', {}, el('span', { id: 'run-name' }, run.name), ' ', statusBadge(run)),
    el('p', { class: 'meta' }, `run ${run.id} · job ${run.job_id ?? '–'} · step ${fmt.int(run.steps_done)}${target}` +
      ` · wall ${fmt.duration(run.wall_s)} · created ${fmt.time(run.created_at)}` +
      (run.partition ? ` · partition ${run.partition}` : '') + (run.reason ? ` · ${run.reason}` : '')),
    whyItStopped(run, attempts.attempts, openLog),
    auditLine(run),
    stopSaveLine(run),
    ettrLine(run.time),
    actions,
    incidents,
    el('div', { class: 'controls' }, el('label', {}, 'x axis ', axisSelect),
      el('label', {}, faintToggle, ` show superseded steps (${fmt.int(run.audit.steps_redone)} redone after resumes)`),
      zoom, csv, el('a', { href: `#/compare?runs=${id}` }, 'compare…')),
    zoomNote,
    grid,
    el('h2', {}, 'Where the time went'), timeBox.box, checkpointAdvice(run.time),
    el('h2', {}, 'Attempts'), attemptsTable(attempts.attempts, openLog),
    logBox,
    el('h2', {}, 'Profile'), profileTable(profile),
    ...nonfiniteSection(run.nonfinite),
    ...evalsSection(run.evals),
    el('h2', {}, 'Checkpoints'), checkpointsTable(checkpoints.checkpoints),
    el('h2', {}, 'Config'), el('pre', { id: 'config', class: 'config' }, run.config));
  renderCharts(grid, run, series, view, profile);
  // One bar per attempt: the box grows with their number.
  timeBox.canvas.parentNode.style.height = `${80 + 30 * (run.time ? run.time.attempts.length : 0)}px`;
  charts.push(renderTimeChart(timeBox.canvas, run.time));
  if (state.log) await showLog(logBox, id, Number(state.log));
  if (!isCurrent()) return;
  document.body.dataset.ready = 'run';
  document.getElementById('refresh-note').textContent = run.live ? 'live: refreshing every 10 s' : '';
  if (run.live) setTimeout(() => { if (isCurrent()) showRun(root, id, state, isCurrent).catch(() => {}); }, REFRESH_MS);
}

export { destroyCharts };
