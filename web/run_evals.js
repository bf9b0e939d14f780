// A run's eval results (GET /api/runs/{id} "evals": one per evaluated checkpoint, by step): the
// held-out loss as chart points on the run page (beside the training loss, and a chart of its
// own with the video and action parts), the compare page's series per run, and the table of
// them. A value that is not a finite number is null and leaves a gap.
import { el, table } from './dom.js';
import * as fmt from './format.js';

export const EVAL_COLOR = 'rgb(227, 119, 194)';
const PARTS = [['loss', 'eval loss', EVAL_COLOR], ['loss_video', 'eval video', 'rgb(44, 160, 44)'],
  ['loss_action', 'eval action', 'rgb(214, 39, 40)']];

// {x, y} of one metric per evaluated checkpoint, x through `toX` (step → the chart's axis).
export function evalPoints(evals, key, toX) {
  return (evals || []).map((e) => ({ x: toX(e.step), y: e.metrics[key] }));
}

// The held-out total, drawn over the training loss chart (points joined by a line).
export function evalOverlay(evals, toX) {
  if (!evals || !evals.length) return [];
  return [{ label: 'eval (held-out)', data: evalPoints(evals, 'loss', toX), color: EVAL_COLOR, points: true }];
}

// Datasets of the eval chart: total, video and action.
export function evalDatasets(evals, toX) {
  return PARTS.map(([key, label, color]) => ({ label, data: evalPoints(evals, key, toX), color, points: true,
    dashed: key !== 'loss' }));
}

// "Evals" heading and table (step, losses), the best row marked; nothing without evals.
export function evalsSection(evals) {
  if (!evals || !evals.length) return [];
  let best = null;
  evals.forEach((e) => {
    if (e.metrics.loss !== null && (best === null || e.metrics.loss < best.metrics.loss)) best = e;
  });
  return [
    el('h2', {}, 'Evals'),
    el('p', { id: 'evals-note', class: 'meta' }, `${fmt.int(evals.length)} checkpoints evaluated on held-out episodes` +
      (best ? `; best loss ${fmt.num(best.metrics.loss)} at step ${fmt.int(best.step)}` : '')),
    table(['Step', 'Loss', 'Video', 'Action'], evals.map((e) => [
      el('td', { class: e === best ? 'best-eval' : null }, fmt.int(e.step)), fmt.num(e.metrics.loss),
      fmt.num(e.metrics.loss_video), fmt.num(e.metrics.loss_action)]), { id: 'evals-table', class: 'data' }),
  ];
}
