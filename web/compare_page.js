// #/compare?runs=1,4,7&axis=step: the runs (with their ETTR, with and without queue time) and their
// loss, learning rate, throughput and padding waste overlaid (one colour per run; the held-out
// eval loss too, when a run has any), x by step,
// tokens seen or wall time; each run's attempt boundaries (dashed, in its colour, "name #n") and
// warmup ranges (shaded in its colour); and a table of the config keys whose values differ between
// the runs (only those). Text from the runs (names, config values) goes in as text nodes (dom.js).
import { getJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';
import { AXES, points, stepMapper, lineChart } from './charts.js';
import { statusBadge } from './runs_page.js';
import { evalPoints } from './run_evals.js';

const MAX_POINTS = 1000;  // per run and key
const MAX_RUNS = 8;
export const PALETTE = ['rgb(31, 119, 180)', 'rgb(214, 39, 40)', 'rgb(44, 160, 44)',
  'rgb(148, 103, 189)', 'rgb(255, 127, 14)', 'rgb(23, 190, 207)', 'rgb(140, 86, 75)', 'rgb(227, 119, 194)'];
const KEYS = ['loss', 'lr', 'tokens_per_s', 'padding'];

let charts = [];
export function destroyCompareCharts() { charts.forEach((c) => c.destroy()); charts = []; }

function alpha(color, a) { return color.replace('rgb(', 'rgba(').replace(')', `, ${a})`); }

// Attempt boundaries and warmup boxes of one run, in its colour, on the chosen axis.
function runAnnotations(run, color, toX, k) {
  const out = {};
  run.segments.forEach((seg, i) => {
    if (i > 0) {
      out[`r${k}b${seg.attempt}`] = {
        type: 'line', xMin: toX(seg.step0), xMax: toX(seg.step0), borderColor: color,
        borderWidth: 1, borderDash: [4, 3],
        label: { display: true, content: `${run.name} #${seg.attempt}`, position: (i + k) % 2 ? 'start' : 'end',
          font: { size: 10 }, backgroundColor: alpha(color, 0.8), padding: 2 },
      };
    }
    if (seg.warmup_from !== null && seg.warmup_until !== null) {
      out[`r${k}w${seg.attempt}`] = { type: 'box', xMin: toX(seg.warmup_from), xMax: toX(seg.warmup_until),
        backgroundColor: alpha(color, 0.08), borderWidth: 0 };
    }
  });
  return out;
}

// Keys of the flattened configs whose values are not all the same (a key missing in one run
// differs too), sorted.
export function differingKeys(configs) {
  const keys = new Set();
  configs.forEach((c) => Object.keys(c).forEach((k) => keys.add(k)));
  return [...keys].sort().filter((k) => new Set(configs.map((c) => (k in c ? c[k] : '\u0000missing'))).size > 1);
}

export async function showCompare(root, state, isCurrent) {
  const ids = (state.runs || '').split(',').map((s) => s.trim()).filter((s) => /^\d+$/.test(s));
  const unique = [...new Set(ids)].slice(0, MAX_RUNS);
  const axis = ['step', 'tokens', 'wall'].includes(state.axis) ? state.axis : 'step';
  if (!unique.length) {
    fill(root, el('h1', {}, 'Compare runs'),
      el('p', { id: 'compare-empty' }, 'Select runs on the ', el('a', { href: '#/' }, 'runs page'),
        ' or give their ids: #/compare?runs=1,4,7'));
    document.body.dataset.ready = 'compare';
    return;
  }
  const loaded = await Promise.all(unique.map((id) => Promise.all([
    getJson(`runs/${id}`),
    getJson(`runs/${id}/series`, { keys: KEYS.join(','), max_points: MAX_POINTS })])));
  if (!isCurrent()) return;
  const runs = loaded.map(([run, series], k) => ({ run, series: series.series, color: PALETTE[k % PALETTE.length] }));

  const go = (patch) => {
    const q = new URLSearchParams({ runs: unique.join(','), axis, ...patch });
    location.hash = `#/compare?${q}`;
  };
  const axisSelect = el('select', { id: 'compare-axis', onchange: (e) => go({ axis: e.target.value }) },
    Object.entries(AXES).map(([k, a]) => el('option', { value: k, selected: k === axis }, a.label)));
  const grid = el('div', { class: 'charts compare' });
  const legend = table(['', 'Run', 'Status', 'Steps', 'Last loss', 'Partition', 'Attempts', 'ETTR',
    'ETTR without queue', 'Wall'],
    runs.map(({ run, color }) => [
      el('td', {}, el('span', { class: 'swatch', style: null, dataset: { color } })),
      el('td', {}, el('a', { href: `#/runs/${run.id}`, class: 'run-name' }, run.name)),
      el('td', {}, statusBadge(run)), `${fmt.int(run.steps_done)} / ${fmt.int(run.target_steps)}`,
      fmt.num(run.last_loss), run.partition || '–', String(run.attempt),
      el('td', { class: 'num ettr' }, fmt.pct(run.time ? run.time.ettr : null)),
      el('td', { class: 'num' }, fmt.pct(run.time ? run.time.ettr_without_queue : null)),
      el('td', { class: 'num' }, fmt.duration(run.time ? run.time.wall_s : null))]),
    { id: 'compare-runs', class: 'data' });

  const configs = runs.map(({ run }) => run.config_keys || {});
  const diff = differingKeys(configs);
  const diffTable = diff.length
    ? table(['Key', ...runs.map(({ run }) => `${run.name} (${run.id})`)],
      diff.map((k) => [el('td', { class: 'config-key' }, k),
        ...configs.map((c) => el('td', { class: 'config-value' }, k in c ? c[k] : '(not set)'))]),
      { id: 'config-diff', class: 'data' })
    : el('p', { id: 'config-diff-none', class: 'muted' }, 'The configs do not differ.');

  fill(root,
    el('p', {}, el('a', { href: '#/' }, '‹ all runs')),
    el('h1', {}, `Compare ${runs.length} runs`),
    legend,
    el('div', { class: 'controls' }, el('label', {}, 'x axis ', axisSelect)),
    grid,
    el('h2', {}, `Config: ${diff.length} key${diff.length === 1 ? '' : 's'} differ`), diffTable);
  for (const sw of root.querySelectorAll('.swatch')) sw.style.background = sw.dataset.color;

  destroyCompareCharts();
  const charts_ = [['compare-loss', 'Loss', 'loss', 'loss'], ['compare-lr', 'Learning rate', 'lr', 'lr'],
    ['compare-throughput', 'Throughput', 'tokens_per_s', 'tokens/s'],
    ['compare-padding', 'Padding waste per step', 'padding', 'fraction']];
  for (const [id, title, key, yTitle] of charts_) {
    const canvas = el('canvas', { id });
    grid.appendChild(el('section', { class: 'chart' }, el('h3', {}, title), el('div', { class: 'canvas-wrap' }, canvas)));
    let annotation = {};
    const datasets = runs.map(({ run, series, color }, k) => {
      annotation = { ...annotation, ...runAnnotations(run, color, stepMapper(series.lr, axis), k) };
      return { label: run.name, data: points(series[key], axis), color };
    });
    charts.push(lineChart(canvas, { axis, datasets, annotation, yTitle }));
  }
  if (runs.some(({ run }) => run.evals && run.evals.length)) {
    const canvas = el('canvas', { id: 'compare-eval' });
    grid.appendChild(el('section', { class: 'chart' }, el('h3', {}, 'Eval loss (held-out)'), el('div', { class: 'canvas-wrap' }, canvas)));
    const datasets = runs.map(({ run, series, color }) => ({ label: run.name, color, points: true,
      data: evalPoints(run.evals, 'loss', stepMapper(series.lr, axis)) }));
    charts.push(lineChart(canvas, { axis, datasets, annotation: {}, yTitle: 'eval loss' }));
  }
  document.body.dataset.ready = 'compare';
}
