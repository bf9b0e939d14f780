// The runs table: status (SLURM-like, with the attempt number), name, progress, last loss,
// current LR, restarts (reasons on hover), last checkpoint, job, created, wall time. Sorted and
// paginated by the server; refreshes itself while a run on the page is live.
import { getJson } from './api.js';
import { el, clear, table } from './dom.js';
import * as fmt from './format.js';

const PAGE = 50;          // runs per page
const REFRESH_MS = 5000;  // auto-refresh period while runs are live

// [label, sort key or null]
const COLUMNS = [
  ['Status', 'status'], ['Name', 'name'], ['Progress', 'progress'], ['Last loss', 'last_loss'],
  ['LR', 'last_lr'], ['Restarts', null], ['Last checkpoint', null], ['Job', 'id'],
  ['Created', 'created'], ['Wall time', null],
];

export function statusBadge(run) {
  const label = run.attempt > 0 ? `${run.status} #${run.attempt}` : run.status;
  return el('span', { class: `status status-${run.status.toLowerCase()}`, title: run.reason || null }, label);
}

function restartsCell(run) {
  const lines = run.attempts.map((a, i) =>
    `#${i + 1} job ${a.job_id}.${a.restart_count}: ${a.end_reason || 'running'}` +
    (a.step0 !== null ? ` (steps ${a.step0}–${a.last_step ?? '…'})` : ''));
  return el('td', { class: 'num', title: lines.join('\n') || null },
    el('span', { class: run.restarts > 0 ? 'has-tip' : null }, String(run.restarts)));
}

function row(run) {
  const progress = run.progress ?? 0;
  return [
    el('td', {}, statusBadge(run)),
    el('td', {}, el('a', { href: `#/runs/${run.id}`, class: 'run-name' }, run.name)),
    el('td', { class: 'progress-cell' },
      el('div', { class: 'bar' }, el('div', { class: 'fill', dataset: { pct: Math.round(progress * 100) } })),
      `${fmt.int(run.steps_done)} / ${fmt.int(run.target_steps)}`),
    el('td', { class: 'num' }, fmt.num(run.last_loss)),
    el('td', { class: 'num' }, fmt.num(run.last_lr, 3)),
    restartsCell(run),
    el('td', {}, run.last_checkpoint_step === null ? '–'
      : `${fmt.int(run.last_checkpoint_step)} (${fmt.duration(run.last_checkpoint_age_s)} ago)`),
    el('td', {}, run.job_id ?? '–'),
    el('td', {}, fmt.time(run.created_at)),
    el('td', { class: 'num' }, fmt.duration(run.wall_s)),
  ];
}

export async function showRuns(root, state, isCurrent) {
  const sort = state.sort || 'created';
  const order = state.order || 'desc';
  const offset = Number(state.offset || 0);
  const data = await getJson('runs', { limit: PAGE, offset, sort, order });
  if (!isCurrent()) return;

  const go = (patch) => {
    const next = { sort, order, offset, ...patch };
    location.hash = '#/?' + new URLSearchParams(next);
  };
  const headers = COLUMNS.map(([label, key]) => {
    if (!key) return el('th', {}, label);
    const active = key === sort;
    const arrow = active ? (order === 'desc' ? ' ▼' : ' ▲') : '';
    return el('th', { class: 'sortable', onclick: () => go({ sort: key, order: active && order === 'desc' ? 'asc' : 'desc', offset: 0 }) }, label + arrow);
  });
  const total = data.page.total;
  const pager = el('div', { class: 'pager' },
    el('button', { disabled: offset === 0, onclick: () => go({ offset: Math.max(0, offset - PAGE) }) }, '‹ Prev'),
    el('span', {}, total === 0 ? 'no runs' : `${offset + 1}–${Math.min(offset + PAGE, total)} of ${fmt.int(total)}`),
    el('button', { disabled: offset + PAGE >= total, onclick: () => go({ offset: offset + PAGE }) }, 'Next ›'));
  const t = table(headers, data.runs.map(row), { id: 'runs-table', class: 'data' });
  clear(root).append(el('h1', {}, 'Runs'), t, pager);
  for (const fill of root.querySelectorAll('.fill')) fill.style.width = fill.dataset.pct + '%';

  const live = data.runs.some((r) => r.live);
  document.getElementById('refresh-note').textContent = live ? 'live: refreshing every 5 s' : '';
  document.body.dataset.ready = 'runs';
  if (live) {
    setTimeout(() => { if (isCurrent()) showRuns(root, state, isCurrent).catch(() => {}); }, REFRESH_MS);
  }
}
