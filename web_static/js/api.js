// Talking to the htamerge server: JSON over fetch, with the token the page
// was opened with (?token=...) sent as a Bearer header on every API call.
const token = new URLSearchParams(location.search).get('token');

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function call(path, init = {}) {
  const headers = Object.assign({}, init.headers || {});
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(path, Object.assign({}, init, { headers }));
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) throw new ApiError(res.status, (body && body.error) || `${res.status} ${res.statusText}`);
  return body;
}

export const api = {
  run: () => call('/api/run'),
  ranks: () => call('/api/ranks'),
  topics: () => call('/api/topics'),
  report: (topic, params = {}) => call(`/api/report/${encodeURIComponent(topic)}?${new URLSearchParams(params)}`),
  timeline: (params) => call(`/api/timeline?${new URLSearchParams(params)}`),
  heatmap: (params) => call(`/api/heatmap?${new URLSearchParams(params)}`),
  counters: (params) => call(`/api/counters?${new URLSearchParams(params)}`),
  windows: (params) => call(`/api/windows?${new URLSearchParams(params)}`),
  search: (q) => call(`/api/search?${new URLSearchParams({ q })}`),
  slice: (id) => call(`/api/slice/${id}`),
  collective: (id) => call(`/api/collective/${id}`),
  nvtx: (id) => call(`/api/nvtx/${id}`),
  pathSteps: () => call('/api/path'),
  path: (step) => call(`/api/path/${encodeURIComponent(step)}`),
  collectiveFind: (pg, seq) => call(`/api/collective/find?${new URLSearchParams({ pg, seq })}`),
  sql: (text) => call('/api/sql', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: text }),
};
