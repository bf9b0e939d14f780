// The runs table: status (SLURM-like, with the attempt number), name, owner, progress, last
// loss, current LR, restarts (reasons on hover), last checkpoint, job, created, wall time. Sorted,
// filtered (status, name substring, partition, owner, cluster, created date range) and paginated
// by the server, all in the URL (#/?status=FAILED&name=lr&partition=a100&owner=alice&from=...);
// a checkbox per run selects runs for #/compare. Refreshes itself while a run on it is live.
import { getJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';

const PAGE = 50;          // runs per page
const REFRESH_MS = 5000;  // auto-refresh period while runs are live

const STATUSES = ['PENDING', 'RUNNING', 'REQUEUED', 'COMPLETED', 'FAILED', 'CANCELLED'];

// A yyyy-mm-dd date (local midnight) as Unix seconds; `nextDay` for an inclusive end date.
function dateSeconds(text, nextDay = false) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text || '');
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + (nextDay ? 1 : 0));
  return Math.floor(d.getTime() / 1000);
}

// [label, sort key or null]
const COLUMNS = [
  ['Status', 'status'], ['Name', 'name'], ['Owner', null], ['Progress', 'progress'], ['Last loss', 'last_loss'],
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

function row(run, selected, toggle) {
  const progress = run.progress ?? 0;
  return [
    el('td', {}, el('input', { type: 'checkbox', class: 'select-run', dataset: { run: run.id },
      checked: selected.has(String(run.id)), onchange: (e) => toggle(String(run.id), e.target.checked) })),
    el('td', {}, statusBadge(run)),
    el('td', {}, el('a', { href: `#/runs/${run.id}`, class: 'run-name' }, run.name)),
    el('td', { class: 'owner', title: run.cluster ? `cluster ${run.cluster}` : null }, run.owner || '–'),
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
  const filters = { status: state.status || '', name: state.name || '', partition: state.partition || '',
    owner: state.owner || '', cluster: state.cluster || '', from: state.from || '', to: state.to || '' };
  const data = await getJson('runs', { limit: PAGE, offset, sort, order,
    status: filters.status || undefined, name: filters.name || undefined,
    partition: filters.partition || undefined, owner: filters.owner || undefined,
    cluster: filters.cluster || undefined,
    created_from: dateSeconds(filters.from), created_to: dateSeconds(filters.to, true) });
  if (!isCurrent()) return;

  const go = (patch) => {
    const next = { sort, order, offset, ...filters, ...patch };
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(next)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
    location.hash = '#/?' + q;
  };
  // Runs picked for comparison, kept in sessionStorage across pages and filters.
  const selected = new Set(JSON.parse(sessionStorage.getItem('baton-compare') || '[]'));
  const compareLink = el('a', { id: 'compare-selected', class: 'button' });
  const updateCompare = () => {
    sessionStorage.setItem('baton-compare', JSON.stringify([...selected]));
    compareLink.textContent = `Compare selected (${selected.size})`;
    compareLink.href = `#/compare?runs=${[...selected].join(',')}`;
    compareLink.classList.toggle('disabled', selected.size < 1);
  };
  const toggle = (id, on) => { if (on) selected.add(id); else selected.delete(id); updateCompare(); };
  updateCompare();
  const input = (id, value, attrs = {}) => el('input', { id, value, ...attrs });
  const nameIn = input('filter-name', filters.name, { placeholder: 'name contains', type: 'search' });
  const partIn = input('filter-partition', filters.partition, { placeholder: 'partition', size: 10 });
  const ownerIn = input('filter-owner', filters.owner, { placeholder: 'owner', size: 10 });
  const clusterIn = input('filter-cluster', filters.cluster, { placeholder: 'cluster', size: 10 });
  const fromIn = input('filter-from', filters.from, { type: 'date' });
  const toIn = input('filter-to', filters.to, { type: 'date' });
  const statusIn = el('select', { id: 'filter-status' }, el('option', { value: '' }, 'any status'),
    STATUSES.map((st) => el('option', { value: st, selected: st === filters.status }, st)));
  const apply = () => go({ offset: 0, status: statusIn.value, name: nameIn.value.trim(),
    partition: partIn.value.trim(), owner: ownerIn.value.trim(), cluster: clusterIn.value.trim(),
    from: fromIn.value, to: toIn.value });
  const form = el('form', { id: 'filters', class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
    statusIn, nameIn, partIn, ownerIn, clusterIn, el('label', {}, 'created ', fromIn, ' – ', toIn),
    el('button', { type: 'submit', id: 'filter-apply' }, 'filter'),
    el('button', { type: 'button', onclick: () => go({ offset: 0, status: '', name: '', partition: '', owner: '', cluster: '', from: '', to: '' }) }, 'clear'),
    compareLink);
  const headers = [el('th', {}, '')].concat(COLUMNS.map(([label, key]) => {
    if (!key) return el('th', {}, label);
    const active = key === sort;
    const arrow = active ? (order === 'desc' ? ' ▼' : ' ▲') : '';
    return el('th', { class: 'sortable', onclick: () => go({ sort: key, order: active && order === 'desc' ? 'asc' : 'desc', offset: 0 }) }, label + arrow);
  }));
  const total = data.page.total;
  const pager = el('div', { class: 'pager' },
    el('button', { disabled: offset === 0, onclick: () => go({ offset: Math.max(0, offset - PAGE) }) }, '‹ Prev'),
    el('span', {}, total === 0 ? 'no runs' : `${offset + 1}–${Math.min(offset + PAGE, total)} of ${fmt.int(total)}`),
    el('button', { disabled: offset + PAGE >= total, onclick: () => go({ offset: offset + PAGE }) }, 'Next ›'));
  const t = table(headers, data.runs.map((r) => row(r, selected, toggle)), { id: 'runs-table', class: 'data' });
  fill(root, el('h1', {}, 'Runs'), form, t, pager);
  for (const fill of root.querySelectorAll('.fill')) fill.style.width = fill.dataset.pct + '%';

  const live = data.runs.some((r) => r.live);
  document.getElementById('refresh-note').textContent = live ? 'live: refreshing every 5 s' : '';
  document.body.dataset.ready = 'runs';
  if (live) {
    setTimeout(() => { if (isCurrent()) showRuns(root, state, isCurrent).catch(() => {}); }, REFRESH_MS);
  }
}
