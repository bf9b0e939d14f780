// Where a run's wall time went (the API's `time`, orchestrator/store/run_time_buckets.h): the
// run's ETTR (productive / wall, and without queue time), one stacked bar per attempt of its
// buckets (the gap before the attempt and its own start → end), and the checkpoint interval
// that would lose the least time (Young/Daly) from the run's own measurements.
import { el } from './dom.js';
import * as fmt from './format.js';

// Bucket → label and colour, in the API's order (the stack's order, left to right).
export const BUCKETS = [
  ['queue', 'queue', 'rgb(180, 180, 180)'],
  ['requeue_hold', 'requeue hold', 'rgb(245, 158, 11)'],
  ['queue_after_requeue', 'queue after requeue', 'rgb(253, 211, 77)'],
  ['restart', 'restart in job', 'rgb(251, 146, 60)'],
  ['startup', 'startup', 'rgb(96, 165, 250)'],
  ['productive', 'productive', 'rgb(22, 163, 74)'],
  ['rolled_back', 'rolled back', 'rgb(220, 38, 38)'],
  ['skipped', 'skipped (non-finite)', 'rgb(153, 27, 27)'],
  ['checkpoint_stall', 'checkpoint stall', 'rgb(124, 58, 237)'],
  ['eval', 'eval (inline)', 'rgb(13, 148, 136)'],
  ['other', 'other', 'rgb(120, 113, 108)'],
  ['stop', 'stop', 'rgb(30, 64, 175)'],
  ['hang_detection', 'hang detection', 'rgb(190, 24, 93)'],
];

// "ETTR 71.5 % (72.8 % without queue)" and the biggest buckets of the run.
export function ettrLine(time) {
  if (!time) return null;
  const b = time.buckets;
  const top = BUCKETS.filter(([k]) => b[k] > 0).sort((x, y) => b[y[0]] - b[x[0]]).slice(0, 5)
    .map(([k, label]) => `${label} ${fmt.duration(b[k])}`).join(' · ');
  return el('p', { id: 'ettr-line', class: 'audit' },
    el('strong', {}, 'Effective training time: '),
    el('span', { id: 'ettr' }, `ETTR ${fmt.pct(time.ettr)}`), ' (',
    el('span', { id: 'ettr-without-queue' }, fmt.pct(time.ettr_without_queue)), ' without queue) of ',
    fmt.duration(time.wall_s), ' wall since submit', top ? ` · ${top}` : '');
}

// The Young/Daly interval sqrt(2 · save stall · mean time between interruptions), or why not.
export function checkpointAdvice(time) {
  if (!time) return null;
  const c = time.checkpoint_interval;
  const what = 'Checkpoint interval that minimises lost time (Young/Daly: √(2 · save stall · mean time between interruptions)): ';
  if (c.seconds === null) return el('p', { id: 'ckpt-advice', class: 'meta' }, what, el('span', { id: 'ckpt-advice-value' }, c.reason));
  const steps = c.steps === null ? '' : `every ${fmt.int(Math.round(c.steps))} steps, `;
  return el('p', { id: 'ckpt-advice', class: 'meta' }, what,
    el('span', { id: 'ckpt-advice-value' }, `${steps}${fmt.duration(c.seconds)}`),
    ` — from ${c.interruptions} interruption${c.interruptions === 1 ? '' : 's'} (one per ` +
    `${fmt.duration(c.mean_time_between_interruptions_s)} of running) and a mean save stall of ${fmt.num(c.mean_save_s, 3)} s`);
}

// The chart's box; renderTimeChart draws into its canvas once it is in the page.
export function timeChartBox() {
  const canvas = el('canvas', { id: 'chart-time' });
  return { canvas, box: el('section', { class: 'chart time-chart' },
    el('h3', {}, 'Where the time went, per attempt (the wait before it, then start → end)'),
    el('div', { class: 'canvas-wrap' }, canvas)) };
}

// One horizontal stacked bar per attempt, seconds; only the buckets that hold time.
export function renderTimeChart(canvas, time) {
  const attempts = time ? time.attempts : [];
  const used = BUCKETS.filter(([k]) => attempts.some((a) => a.buckets[k] > 0));
  return new Chart(canvas, {
    type: 'bar',
    data: {
      labels: attempts.map((a) => `#${a.attempt}`),
      datasets: used.map(([k, label, color]) => ({
        label, backgroundColor: color, borderWidth: 0, data: attempts.map((a) => a.buckets[k]),
      })),
    },
    options: {
      indexAxis: 'y', animation: false, responsive: true, maintainAspectRatio: false,
      scales: { x: { stacked: true, title: { display: true, text: 'seconds' } }, y: { stacked: true } },
      plugins: { legend: { labels: { boxWidth: 12, font: { size: 11 } } },
        tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${fmt.duration(c.raw)}` } } },
    },
  });
}
