// The single-page app: #/nodes (the node ledger, nodes_page.js), #/sweeps and #/sweeps/<id> (sweeps_page.js), #/ (runs, with ?sort=&order=&offset= and the filters), #/runs/<id> (one
// run, with ?axis=&superseded=&from=&to=&log=) and #/compare?runs=1,4,7 (&axis=). Every view's
// state is in its URL, so a URL shared is the same view. Each navigation bumps a generation
// counter so a slow response for an old page never draws over a new one.
import { el, fill } from './dom.js';
import { showRuns } from './runs_page.js';
import { showRun, destroyCharts } from './run_page.js';
import { showCompare, destroyCompareCharts } from './compare_page.js';
import { showSweeps, showSweep, destroySweepCharts } from './sweeps_page.js';
import { showNodes } from './nodes_page.js';

let generation = 0;

// The hash's query (#/path?a=1&b=2) as an object.
function hashQuery(hash) {
  const i = hash.indexOf('?');
  return Object.fromEntries(new URLSearchParams(i >= 0 ? hash.slice(i + 1) : ''));
}

async function route() {
  const mine = ++generation;
  const isCurrent = () => mine === generation;
  const root = document.getElementById('app');
  destroyCharts();
  destroyCompareCharts();
  destroySweepCharts();
  delete document.body.dataset.ready;
  document.getElementById('refresh-note').textContent = '';
  const hash = location.hash || '#/';
  const path = hash.split('?')[0];
  try {
    const m = path.match(/^#\/runs\/(\d+)$/);
    if (m) {
      await showRun(root, m[1], hashQuery(hash), isCurrent);
    } else if (path.match(/^#\/sweeps\/(\d+)$/)) {
      await showSweep(root, path.match(/^#\/sweeps\/(\d+)$/)[1], hashQuery(hash), isCurrent);
    } else if (path === '#/sweeps') {
      await showSweeps(root, hashQuery(hash), isCurrent);
    } else if (path === '#/nodes') {
      await showNodes(root, hashQuery(hash), isCurrent);
    } else if (path === '#/compare') {
      await showCompare(root, hashQuery(hash), isCurrent);
    } else {
      await showRuns(root, hashQuery(hash), isCurrent);
    }
  } catch (e) {
    if (!isCurrent()) return;
    fill(root, el('h1', {}, 'Error'),
      el('p', { class: 'error', id: 'error' }, `${e.status ? e.status + ' ' : ''}${e.message}`),
      el('p', {}, el('a', { href: '#/' }, '‹ all runs')));
    document.body.dataset.ready = 'error';
  }
}

window.addEventListener('hashchange', route);
route();
