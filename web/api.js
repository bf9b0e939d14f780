// The JSON API client (docs/http_api.md). A token given once as ?token=… in the page URL is
// kept for the tab (sessionStorage) and sent as a Bearer header, never put in API URLs.

const params = new URLSearchParams(window.location.search);
if (params.has('token')) sessionStorage.setItem('baton-token', params.get('token'));

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function getJson(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, v);
  const url = '/api/' + path + (q.toString() ? '?' + q : '');
  const headers = {};
  const token = sessionStorage.getItem('baton-token');
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(url, { headers, cache: 'no-store' });
  let body = null;
  try { body = await res.json(); } catch { body = null; }
  if (!res.ok) {
    const err = (body && body.error) || {};
    throw new ApiError(res.status, err.code || 'http_error', err.message || res.statusText);
  }
  return body;
}

// A write action (POST, no body): the token goes in the Authorization header only, never in the
// URL or a cookie; X-Requested-With tells the server it comes from this page (a form on another
// site cannot set it).
export async function postJson(path) {
  const headers = { 'X-Requested-With': 'baton' };
  const token = sessionStorage.getItem('baton-token');
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch('/api/' + path, { method: 'POST', headers, cache: 'no-store' });
  let body = null;
  try { body = await res.json(); } catch { body = null; }
  if (!res.ok) {
    const err = (body && body.error) || {};
    throw new ApiError(res.status, err.code || 'http_error', err.message || res.statusText);
  }
  return body;
}

// The URL of an API resource for a link (a CSV download): the token, when there is one, goes in
// the query because a link cannot carry a header.
export function apiUrl(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, v);
  const token = sessionStorage.getItem('baton-token');
  if (token) q.set('token', token);
  return '/api/' + path + (q.toString() ? '?' + q : '');
}
