// Chart.js line charts over the series endpoint's points, with the run's attempt boundaries
// (labelled lines), warmup ranges (shaded boxes) and skipped non-finite steps (red boxes) drawn
// by chartjs-plugin-annotation.
// x is the step, tokens seen or wall time; boundaries and boxes are given in steps and mapped
// onto the chosen axis through a reference series.

export const AXES = {
  step: { label: 'step', of: (p, i) => p.step[i] },
  tokens: { label: 'tokens seen', of: (p, i) => p.tokens[i] },
  wall: { label: 'wall time (h)', of: (p, i) => p.wall_s[i] / 3600 },
};

// {x, y} points of one series part on the given axis. `breakOnAttempt` leaves a gap where the
// attempt changes (superseded stretches of different attempts are not one line).
export function points(part, axis, breakOnAttempt = false) {
  const of = AXES[axis].of;
  const out = [];
  for (let i = 0; i < part.step.length; i++) {
    if (breakOnAttempt && i > 0 && part.attempt[i] !== part.attempt[i - 1]) {
      out.push({ x: of(part, i), y: null });
    }
    out.push({ x: of(part, i), y: part.value[i] });
  }
  return out;
}

// step → x on `axis`, interpolated over a reference series (its steps ascend).
export function stepMapper(ref, axis) {
  if (axis === 'step' || !ref || ref.step.length === 0) return (s) => s;
  const of = AXES[axis].of;
  return (s) => {
    let lo = 0, hi = ref.step.length - 1;
    if (s <= ref.step[lo]) return of(ref, lo);
    if (s >= ref.step[hi]) return of(ref, hi);
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (ref.step[mid] <= s) lo = mid; else hi = mid;
    }
    const t = (s - ref.step[lo]) / Math.max(1, ref.step[hi] - ref.step[lo]);
    return of(ref, lo) + t * (of(ref, hi) - of(ref, lo));
  };
}

// Annotations: a line per attempt boundary (full label or "#n") and, when `shade`, a box per
// warmup range.
export function annotations(segments, toX, { fullLabels, shade }) {
  const out = {};
  segments.forEach((seg, i) => {
    if (i > 0) {
      out[`boundary${seg.attempt}`] = {
        type: 'line', xMin: toX(seg.step0), xMax: toX(seg.step0),
        borderColor: 'rgba(90, 90, 90, 0.8)', borderWidth: 1, borderDash: [4, 3],
        label: {
          display: true, content: fullLabels ? seg.label : `#${seg.attempt}`,
          position: i % 2 ? 'start' : 'end', font: { size: 10 },  // alternate: top, bottom
          backgroundColor: 'rgba(60, 60, 60, 0.75)', padding: 3,
        },
      };
    }
    if (shade && seg.warmup_from !== null && seg.warmup_until !== null) {
      const resume = seg.warmup_kind === 'resume_warmup';
      out[`warmup${seg.attempt}`] = {
        type: 'box', xMin: toX(seg.warmup_from), xMax: toX(seg.warmup_until),
        backgroundColor: resume ? 'rgba(230, 120, 20, 0.18)' : 'rgba(40, 120, 220, 0.13)',
        borderWidth: 0,
        label: {
          display: true, content: resume ? 'resume warmup' : 'warmup', position: { x: 'center', y: 'center' },
          font: { size: 10 }, color: resume ? 'rgb(170, 80, 0)' : 'rgb(20, 80, 160)',
        },
      };
    }
  });
  return out;
}

// Red boxes over the steps the trainer skipped because their loss or gradient norm was NaN/Inf:
// `ranges` are [first, last] step indices (the series endpoint's nonfinite.ranges); a box covers
// [first, last + 1) so a single step is still visible. Only the first box carries the label.
export function nonfiniteMarks(ranges, toX) {
  const out = {};
  (ranges || []).forEach(([first, last], i) => {
    out[`nonfinite${i}`] = {
      type: 'box', xMin: toX(first), xMax: toX(last + 1),
      backgroundColor: 'rgba(220, 38, 38, 0.22)', borderColor: 'rgba(220, 38, 38, 0.9)', borderWidth: 1,
      label: {
        display: i === 0, content: 'skipped (non-finite)', position: { x: 'start', y: 'start' },
        font: { size: 10 }, color: 'rgb(153, 27, 27)',
      },
    };
  });
  return out;
}

// datasets: [{label, data, color, dashed, faint, yAxisID, hidden, points}]; `points` draws a
// marker at each point (few points: eval results), the others are plain lines.
export function lineChart(canvas, { axis, datasets, annotation, yTitle, y2Title, logY }) {
  const scales = {
    x: { type: 'linear', title: { display: true, text: AXES[axis].label }, ticks: { callback: tick } },
    y: { type: logY ? 'logarithmic' : 'linear', title: { display: !!yTitle, text: yTitle },
      ticks: { callback: tick } },
  };
  if (y2Title) {
    scales.y2 = { type: 'linear', position: 'right', grid: { drawOnChartArea: false },
      title: { display: true, text: y2Title }, ticks: { callback: tick } };
  }
  return new Chart(canvas, {
    type: 'line',
    data: {
      datasets: datasets.map((d) => ({
        label: d.label, data: d.data, yAxisID: d.yAxisID || 'y', hidden: !!d.hidden,
        borderColor: d.faint ? fade(d.color) : d.color, backgroundColor: d.color,
        borderWidth: d.faint ? 1 : 1.5, borderDash: d.dashed ? [6, 4] : undefined,
        pointRadius: d.points ? 3 : 0, pointHitRadius: 4, tension: 0, spanGaps: false,
      })),
    },
    options: {
      animation: false, parsing: false, normalized: true, responsive: true,
      maintainAspectRatio: false, interaction: { mode: 'nearest', intersect: false, axis: 'x' },
      plugins: { legend: { labels: { boxWidth: 12, font: { size: 11 } } },
        annotation: { annotations: annotation || {} } },
      scales,
    },
  });
}

// Short tick labels: 3e-5 rather than 3.000000E-5, 1.2M rather than 1200000.
function tick(v) {
  const a = Math.abs(v);
  if (v === 0) return '0';
  if (a < 1e-2) return v.toExponential(1);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + 'G';
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + 'M';
  if (a >= 1e4) return (v / 1e3).toPrecision(3) + 'k';
  return Number(v.toPrecision(4)).toString();
}

function fade(color) {
  return color.replace('rgb(', 'rgba(').replace(')', ', 0.25)');
}
