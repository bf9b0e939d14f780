// The run page's incidents (GET /api/runs/<id>/incidents; docs/alerts.md): each incident's kind,
// outcome, attempt (J.R.S), step, node and rank, cause with its excerpt (the stale rank's stack
// or the log's last lines, folded), and the state of each alert delivery per sink, newest first.
// Text only: causes and excerpts come from logs and are never parsed as markup.
import { getJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';

function triesText(n) { return n === 1 ? '1 try' : `${n} tries`; }

// One line per message and sink: "lab #1: sent", "oncall #2: pending (3 tries, timed out)".
function deliveriesCell(deliveries) {
  if (deliveries.length === 0) return el('td', { class: 'incident-alerts meta' }, 'not subscribed');
  return el('td', { class: 'incident-alerts' }, deliveries.map((d) => el('div', { class: `delivery ${d.state}` },
    `${d.sink} #${d.message_seq}: ${d.state}` +
    (d.state === 'sent' ? '' : ` (${triesText(d.tries)}${d.last_error ? `, ${d.last_error}` : ''})`))));
}

function whereText(i) {
  return [i.node ? `node ${i.node}` : '', i.rank ? `rank ${i.rank}` : ''].filter(Boolean).join(' · ') || '–';
}

function causeCell(i) {
  const excerpt = i.excerpt
    ? el('details', { class: 'incident-excerpt' }, el('summary', {}, i.kind === 'hang' ? 'stack' : 'excerpt'),
      el('pre', { class: 'excerpt' }, i.excerpt))
    : null;
  return el('td', { class: 'incident-cause' }, el('div', {}, i.cause), excerpt);
}

export async function incidentsSection(run) {
  const box = el('section', { id: 'run-incidents' });
  let data;
  try {
    data = await getJson(`runs/${run.id}/incidents`);
  } catch (e) { // the rest of the page still shows
    return fill(box, el('h2', {}, 'Incidents'), el('p', { id: 'incidents-error', class: 'meta' }, `incidents unavailable: ${e.message}`));
  }
  if (data.incidents.length === 0) {
    return fill(box, el('h2', {}, 'Incidents'), el('p', { id: 'incidents-none', class: 'meta' }, 'no incidents'));
  }
  return fill(box, el('h2', {}, 'Incidents'),
    table(['opened', 'kind', 'outcome', 'attempt', 'step', 'where', 'cause', 'alerts'],
      data.incidents.map((i) => [fmt.time(i.opened_at), i.kind, i.outcome, i.attempt || '–',
        i.step === null ? '–' : fmt.int(i.step), whereText(i), causeCell(i), deliveriesCell(i.deliveries)]),
      { id: 'incidents-table', class: 'data' }));
}
