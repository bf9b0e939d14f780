// The single-page app: #/ (runs, with ?sort=&order=&offset=) and #/runs/<id>. Each navigation
// bumps a generation counter so a slow response for an old page never draws over a new one.
import { el, clear } from './dom.js';
import { showRuns } from './runs_page.js';
import { showRun, destroyCharts } from './run_page.js';

let generation = 0;

async function route() {
  const mine = ++generation;
  const isCurrent = () => mine === generation;
  const root = document.getElementById('app');
  destroyCharts();
  delete document.body.dataset.ready;
  document.getElementById('refresh-note').textContent = '';
  const hash = location.hash || '#/';
  try {
    const m = hash.match(/^#\/runs\/(\d+)$/);
    if (m) {
      await showRun(root, m[1], isCurrent);
    } else {
      const q = hash.indexOf('?') >= 0 ? new URLSearchParams(hash.slice(hash.indexOf('?') + 1)) : new URLSearchParams();
      await showRuns(root, Object.fromEntries(q), isCurrent);
    }
  } catch (e) {
    if (!isCurrent()) return;
    clear(root).append(el('h1', {}, 'Error'),
      el('p', { class: 'error', id: 'error' }, `${e.status ? e.status + ' ' : ''}${e.message}`),
      el('p', {}, el('a', { href: '#/' }, '‹ all runs')));
    document.body.dataset.ready = 'error';
  }
}

window.addEventListener('hashchange', route);
route();
