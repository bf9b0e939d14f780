// The run page's write actions and their audit: Cancel and Resume buttons (POST
// /api/runs/<id>/cancel | resume, allowed for the run's owner or an admin when the server runs
// with --auth; docs/http_api.md) and the list of every action asked of the run — who, when, what,
// the result. The server decides who may act: the page shows its answer (401, 403, the action's
// own error) as text. Without --auth the server is read-only and the buttons are not shown.
import { getJson, postJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';

const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED'];
const RESUMABLE = ['CANCELLED', 'FAILED', 'PENDING', 'REQUEUED'];

function auditTable(actions) {
  if (actions.length === 0) return el('p', { id: 'actions-none', class: 'meta' }, 'no actions yet');
  return table(['when', 'user', 'action', 'from', 'result', 'status', 'message'],
    actions.map((a) => [fmt.time(a.at), a.user, a.action, a.source,
      el('td', { class: `result-${a.result}` }, a.result),
      a.http_status === null ? '–' : String(a.http_status), a.message || '']),
    { id: 'actions-table', class: 'data' });
}

// The section: buttons (when the server takes write actions) and the audit list. `reload` shows
// the page again after an action, so status and audit are the server's.
export async function actionsSection(run, reload) {
  const data = await getJson(`runs/${run.id}/actions`, { limit: 50 });
  const result = el('p', { id: 'action-result', class: 'meta' });
  const act = async (action) => {
    if (!window.confirm(`${action} run ${run.id} (${run.name})?`)) return;
    result.textContent = `${action}…`;
    try {
      const r = await postJson(`runs/${run.id}/${action}`);
      result.textContent = action === 'cancel'
        ? `cancelled: run is ${r.status}` : `resumed as job ${r.job_id}`;
      reload();
    } catch (e) {
      result.textContent = `${action} refused (${e.status}): ${e.message}`;
      result.classList.add('error');
    }
  };
  const buttons = data.write_actions
    ? el('div', { class: 'controls' },
      el('button', { id: 'cancel-run', disabled: TERMINAL.includes(run.status), onclick: () => act('cancel') }, 'Cancel run'),
      el('button', { id: 'resume-run', disabled: !RESUMABLE.includes(run.status), onclick: () => act('resume') }, 'Resume run'))
    : null;
  const box = el('section', { id: 'run-actions' });
  return fill(box, el('h2', {}, 'Actions'),
    run.owner ? el('p', { class: 'meta' }, `owner ${run.owner}` + (run.cluster ? ` · cluster ${run.cluster}` : '')) : null,
    buttons, result, auditTable(data.actions));
}
