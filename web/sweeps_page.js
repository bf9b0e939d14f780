// #/sweeps (every sweep: name, array job, members and their status counts) and #/sweeps/<id>
// (one sweep): its members table, sortable by any varied key or final figure (the best eval loss
// among them, with its step as the cell's tooltip) (?sort=&order=), a
// plot of a chosen final figure against a chosen varied key (?y=&x=, Chart.js scatter), and a
// checkbox per member: "compare" opens #/compare?runs=... with the selected members' runs. Text
// from the store (names, values) goes in as text nodes (dom.js).
import { getJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';

const FIGURES = [['final_loss', 'final loss'], ['ettr', 'ETTR'], ['restarts', 'restarts'],
  ['last_step', 'step'], ['best_eval_loss', 'best eval loss']];

export const POINT_COLOR = 'rgb(31, 119, 180)';

let chart = null;
export function destroySweepCharts() { if (chart) chart.destroy(); chart = null; }

function counts(c) {
  return Object.entries(c || {}).map(([s, n]) =>
    el('span', { class: `status status-${s.toLowerCase()}` }, `${s} ${n}`));
}

export async function showSweeps(root, query, isCurrent) {
  const data = await getJson('sweeps');
  if (!isCurrent()) return;
  const rows = data.sweeps.map((s) => [
    el('a', { href: `#/sweeps/${s.sweep_id}`, class: 'sweep-name' }, s.name),
    s.job_id || '–', String(s.member_count), el('span', {}, counts(s.counts)), fmt.time(s.created_at)]);
  fill(root, el('h1', {}, 'Sweeps'), el('p', {}, el('a', { href: '#/' }, '‹ all runs')),
    data.sweeps.length ? table(['Name', 'Array', 'Members', 'Status', 'Created'], rows, { id: 'sweeps' })
      : el('p', { class: 'muted', id: 'no-sweeps' }, 'No sweeps yet (baton sweep SPEC.yaml).'));
  document.body.dataset.ready = 'sweeps';
}

// A member's value for a sort or plot key: a varied key's value or a figure.
function valueOf(m, key) {
  if (key in m.values) return m.values[key];
  return m[key] ?? null;
}

function compare(a, b) {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

function text(v) {
  if (v === null || v === undefined) return '–';
  return typeof v === 'number' ? fmt.num(v) : String(v);
}

// Learning rates and weight decays are swept over decades: an axis of positive values that
// spans ten times or more is logarithmic, so 1e-4 and 3e-4 do not sit on top of each other.
// Its ticks are labelled at 1, 2 and 5 times a power of ten only (the others would overlap), and
// it reaches a little past the outer points so that none sits on the edge.
function xScale(values, title) {
  const lo = Math.min(...values), hi = Math.max(...values);
  if (!(values.length > 1 && lo > 0 && hi / lo >= 10)) return { type: 'linear', title };
  const mantissa = (v) => v / 10 ** Math.floor(Math.log10(v) + 1e-9);
  return { type: 'logarithmic', title, min: lo / 1.3, max: hi * 1.3,
    ticks: { callback: (v) => ([1, 2, 5].some((k) => Math.abs(mantissa(v) - k) < 1e-6) ? fmt.num(v) : '') } };
}

function plot(canvas, sweep, x, y) {
  destroySweepCharts();
  const pts = sweep.members.filter((m) => typeof valueOf(m, x) === 'number' && typeof valueOf(m, y) === 'number')
    .map((m) => ({ x: valueOf(m, x), y: valueOf(m, y), label: m.name }));
  const yLabel = (FIGURES.find(([k]) => k === y) || [y, y])[1];
  // A colour of its own, as the run charts have: without one Chart.js draws a dataset in a
  // near-transparent grey unless its optional colour plugin is in effect.
  chart = new window.Chart(canvas, {
    type: 'scatter',
    data: { datasets: [{ label: `${yLabel} vs ${x}`, data: pts, pointRadius: 5, pointHoverRadius: 7,
      backgroundColor: POINT_COLOR, borderColor: POINT_COLOR }] },
    options: { animation: false, maintainAspectRatio: false,
      plugins: { legend: { display: false } },
      scales: { x: xScale(pts.map((p) => p.x), { display: true, text: x }),
        y: { title: { display: true, text: yLabel } } } },
  });
}

export async function showSweep(root, id, query, isCurrent) {
  const sweep = await getJson(`sweeps/${id}`);
  if (!isCurrent()) return;
  const sortKey = query.sort || 'index';
  const desc = query.order === 'desc';
  const members = [...sweep.members].sort((a, b) =>
    (desc ? -1 : 1) * compare(sortKey === 'index' ? a.index : valueOf(a, sortKey),
      sortKey === 'index' ? b.index : valueOf(b, sortKey)));
  const go = (q) => { location.hash = `#/sweeps/${id}?` + new URLSearchParams({ ...query, ...q }); };
  const head = (label, key) => el('th', {}, el('a', { href: '#', class: 'sort', dataset: { key },
    onclick: (e) => { e.preventDefault(); go({ sort: key, order: sortKey === key && !desc ? 'desc' : 'asc' }); } },
  label + (sortKey === key ? (desc ? ' ▼' : ' ▲') : '')));
  const selected = new Set();
  const compareLink = el('a', { id: 'compare', class: 'button', href: '#/compare' }, 'compare');
  const toggle = (run, on) => {
    if (on) selected.add(run); else selected.delete(run);
    compareLink.href = `#/compare?runs=${[...selected].join(',')}`;
  };
  const headers = [el('th', {}, ''), head('#', 'index'), el('th', {}, 'Run'),
    ...sweep.keys.map((k) => head(k, k)), el('th', {}, 'Status'),
    ...FIGURES.map(([k, label]) => head(label, k))];
  const rows = members.map((m) => [
    el('td', {}, el('input', { type: 'checkbox', class: 'select-member', dataset: { run: m.run_id },
      onchange: (e) => toggle(String(m.run_id), e.target.checked) })),
    String(m.index), el('a', { href: `#/runs/${m.run_id}` }, m.name),
    ...sweep.keys.map((k) => text(m.values[k])),
    el('span', { class: `status status-${m.status.toLowerCase()}`, title: m.reason || null }, m.status),
    fmt.num(m.final_loss), m.ettr === null ? '–' : fmt.pct(m.ettr), String(m.restarts),
    `${fmt.int(m.last_step ?? 0)} / ${fmt.int(m.target_steps)}`,
    el('td', { class: 'best-eval', title: m.best_eval_step === null ? null : `at step ${m.best_eval_step}` },
      fmt.num(m.best_eval_loss))]);
  const x = query.x || sweep.keys[0];
  const y = query.y || 'final_loss';
  const select = (name, options, value) => el('select', { id: `plot-${name}`,
    onchange: (e) => go({ [name]: e.target.value }) },
  options.map(([v, label]) => el('option', { value: v, selected: v === value }, label)));
  const canvas = el('canvas', { id: 'sweep-plot' });
  fill(root, el('h1', {}, `Sweep ${sweep.name}`),
    el('p', {}, el('a', { href: '#/sweeps' }, '‹ all sweeps'), ' ', `array ${sweep.job_id}`, ' ',
      el('span', {}, counts(sweep.counts))),
    el('p', {}, 'plot ', select('y', FIGURES, y), ' against ', select('x', sweep.keys.map((k) => [k, k]), x)),
    el('div', { class: 'chart' }, el('div', { class: 'canvas-wrap' }, canvas)),
    el('p', {}, compareLink, el('span', { class: 'muted' }, ' the selected members')),
    table(headers, rows, { id: 'members' }));
  plot(canvas, sweep, x, y);
  document.body.dataset.ready = 'sweep';
}
