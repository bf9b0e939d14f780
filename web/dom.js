// Building DOM nodes without HTML strings: every piece of data (run names, config text, reasons)
// goes in as a text node, so it is shown as text and never parsed as markup. Nothing in the UI
// uses innerHTML.

// el('td', {class: 'num', title: '...'}, 'text', childNode, ...)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else if (c instanceof Node) node.appendChild(c);
    else node.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Replaces node's children, skipping null/undefined/false like el() does (the DOM's own
// append() would show a null part, say an absent note, as the text "null").
export function fill(node, ...children) {
  clear(node);
  append(node, children);
  return node;
}

// A table from column headers and rows of cells (strings or nodes).
export function table(headers, rows, attrs = {}) {
  return el('table', attrs,
    el('thead', {}, el('tr', {}, headers.map((h) => (h instanceof Node ? h : el('th', {}, h))))),
    el('tbody', {}, rows.map((cells) => el('tr', {}, cells.map((c) =>
      (c instanceof Node && c.tagName === 'TD') ? c : el('td', {}, c))))));
}
