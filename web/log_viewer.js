// The log viewer of the run page: the tail of an attempt's logs/<job_id>.out, a page at a time
// backwards ("older"), shown as text in a <pre> (never parsed as markup). The server reads only
// that file inside the run folder (docs/http_api.md).
import { getJson } from './api.js';
import { el, fill } from './dom.js';
import * as fmt from './format.js';

const PAGE_BYTES = 64 * 1024;

export async function showLog(box, runId, attempt) {
  fill(box, el('p', { class: 'muted' }, 'Loading log…'));
  const first = await getJson(`runs/${runId}/log`, { attempt, limit: PAGE_BYTES });
  const pre = el('pre', { id: 'log-text', class: 'log' });
  const pages = [first];
  const header = el('p', { class: 'meta', id: 'log-meta' });
  const older = el('button', { id: 'log-older' }, 'older ‹');
  const render = () => {
    const top = pages[pages.length - 1];
    pre.textContent = pages.slice().reverse().map((p) => p.text).join('');
    header.textContent = first.exists
      ? `${first.path} (job ${first.job_id}, shared by its restarts) · ${fmt.bytes(first.size)} · ` +
        `showing bytes ${fmt.int(top.from)}–${fmt.int(first.to)}`
      : `${first.path}: nothing written yet`;
    older.disabled = !top.more_before;
  };
  older.addEventListener('click', async () => {
    const top = pages[pages.length - 1];
    pages.push(await getJson(`runs/${runId}/log`, { attempt, limit: PAGE_BYTES, before: top.from }));
    render();
  });
  fill(box, el('h3', {}, `Log of attempt #${attempt}`), header, el('div', { class: 'controls' }, older), pre);
  render();
  pre.scrollTop = pre.scrollHeight;
}
