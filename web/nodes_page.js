// #/nodes: the node ledger (GET /api/nodes, docs/nodes.md), the report a user sends their admins.
// A summary table (node, cluster, partition, status, until when, incidents), then per node its
// incidents (time, kind, run, job.restart.seq, rank, source, evidence) and what was done to it
// (exclude, expire, refuse, readmit, by whom), and the whole report as plain text to copy into a
// mail or a ticket. ?host=NAME shows one node. Text from the store (hosts, evidence, messages)
// goes in as text nodes (dom.js).
import { getJson } from './api.js';
import { el, fill, table } from './dom.js';
import * as fmt from './format.js';

function statusBadge(n) {
  const kind = n.status.startsWith('excluded') ? 'excluded' : n.status;
  return el('span', { class: `status status-node-${kind}`, title: n.reason || null }, n.status);
}

function untilText(n) {
  if (n.excluded_until !== null) return `excluded until ${fmt.time(n.excluded_until)}`;
  if (n.probation_until !== null) return `probation until ${fmt.time(n.probation_until)}`;
  return '–';
}

function where(n) {
  return `${n.cluster || '(cluster unknown)'} / ${n.partition || '(default partition)'}`;
}

function attempt(i) { return `${i.job_id}.${i.restart_count}.${i.in_job_seq}`; }

// The plain-text report: one block per node, every incident with its job and evidence.
function reportText(nodes, now) {
  const lines = [`baton node report, ${fmt.time(now)} (${nodes.length} node${nodes.length === 1 ? '' : 's'})`];
  for (const n of nodes) {
    lines.push('', `${n.host}  ${where(n)}  ${n.status}  ${untilText(n)}`);
    if (n.reason) lines.push(`  reason: ${n.reason}`);
    for (const i of n.incidents) {
      lines.push(`  ${fmt.time(i.at)}  ${i.kind}  run ${i.run_id}  job ${attempt(i)}` +
        (i.rank >= 0 ? `  rank ${i.rank}` : '') + `  ${i.evidence}`);
    }
  }
  return lines.join('\n') + '\n';
}

function nodeSection(n) {
  const incidents = n.incidents.map((i) => [fmt.time(i.at), i.kind,
    el('a', { href: `#/runs/${i.run_id}` }, `run ${i.run_id}`), attempt(i),
    i.rank >= 0 ? String(i.rank) : '–', i.source, el('code', { class: 'evidence' }, i.evidence)]);
  const actions = n.actions.map((a) => [fmt.time(a.at), a.user, a.action, a.message]);
  return el('section', { class: 'node', dataset: { host: n.host } },
    el('h2', {}, n.host, ' ', statusBadge(n)),
    el('p', { class: 'muted' }, where(n), ' · ', untilText(n), n.reason ? ` · ${n.reason}` : ''),
    incidents.length
      ? table(['Time', 'Kind', 'Run', 'Job', 'Rank', 'Source', 'Evidence'], incidents, { class: 'incidents' })
      : el('p', { class: 'muted' }, 'No incidents.'),
    actions.length
      ? el('details', {}, el('summary', {}, `${actions.length} action${actions.length === 1 ? '' : 's'}`),
        table(['Time', 'By', 'Action', 'Message'], actions, { class: 'actions' }))
      : null);
}

export async function showNodes(root, query, isCurrent) {
  const data = await getJson('nodes');
  if (!isCurrent()) return;
  const nodes = query.host ? data.nodes.filter((n) => n.host === query.host) : data.nodes;
  const rows = nodes.map((n) => [
    el('a', { href: `#/nodes?host=${encodeURIComponent(n.host)}`, class: 'node-host' }, n.host),
    n.cluster || '–', n.partition || '(default)', statusBadge(n), untilText(n), String(n.incidents.length)]);
  const report = el('pre', { id: 'node-report' }, reportText(nodes, data.now));
  const copy = el('button', { id: 'copy-report', type: 'button', onclick: async () => {
    try { await navigator.clipboard.writeText(report.textContent); copy.textContent = 'copied'; } catch {
      copy.textContent = 'select the text below to copy it';
    }
  } }, 'copy the report');
  const excluded = data.nodes.filter((n) => n.excluded).length;
  fill(root, el('h1', {}, query.host ? `Node ${query.host}` : 'Nodes'),
    el('p', {}, el('a', { href: query.host ? '#/nodes' : '#/' }, query.host ? '‹ all nodes' : '‹ all runs'), ' ',
      el('span', { class: 'muted', id: 'nodes-summary' },
        `${data.nodes.length} node${data.nodes.length === 1 ? '' : 's'} in the ledger, ${excluded} excluded now`)),
    nodes.length ? table(['Node', 'Cluster', 'Partition', 'Status', 'Until', 'Incidents'], rows, { id: 'nodes' })
      : el('p', { class: 'muted', id: 'no-nodes' },
        query.host ? `The ledger holds nothing against ${query.host}.` : 'No node has an incident (docs/nodes.md).'),
    nodes.map(nodeSection),
    nodes.length ? el('h2', {}, 'Report for the admins ', copy) : null,
    nodes.length ? report : null);
  document.body.dataset.ready = 'nodes';
}
