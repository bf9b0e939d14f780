// The run page's incidents (GET /api/runs/<id>/incidents; docs/alerts.md): each incident's kind,
// outcome, attempt (J.R.S), cause and the state of its alert deliveries per sink, newest first.
// Text only: causes and excerpts come from logs and are never parsed as markup.
import { getJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';

function deliveriesText(deliveries) {
  if (deliveries.length === 0) return 'not subscribed';
  return deliveries.map((d) => `${d.sink} #${d.message_seq}: ${d.state}` +
    (d.state === 'sent' ? '' : ` (${d.tries} tries${d.last_error ? `, ${d.last_error}` : ''})`)).join('; ');
}

export async function incidentsSection(run) {
  const data = await getJson(`runs/${run.id}/incidents`);
  const box = el('section', { id: 'run-incidents' });
  if (data.incidents.length === 0) {
    return fill(box, el('h2', {}, 'Incidents'), el('p', { id: 'incidents-none', class: 'meta' }, 'no incidents'));
  }
  return fill(box, el('h2', {}, 'Incidents'),
    table(['opened', 'kind', 'outcome', 'attempt', 'step', 'cause', 'alerts'],
      data.incidents.map((i) => [fmt.time(i.opened_at), i.kind, i.outcome, i.attempt || '–',
        i.step === null ? '–' : fmt.int(i.step), i.cause, deliveriesText(i.deliveries)]),
      { id: 'incidents-table', class: 'data' }));
}
