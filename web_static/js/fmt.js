// Formatting shared by the views: durations, numbers, DOM helpers. Text
// always goes in through textContent, never as HTML.
export function dur(ns) {
  const a = Math.abs(ns);
  if (a >= 1e9) return `${(ns / 1e9).toFixed(a >= 1e10 ? 1 : 3)} s`;
  if (a >= 1e6) return `${(ns / 1e6).toFixed(a >= 1e7 ? 1 : 2)} ms`;
  if (a >= 1e3) return `${(ns / 1e3).toFixed(a >= 1e4 ? 1 : 2)} us`;
  return `${Math.round(ns)} ns`;
}

export function us(v) { return v == null ? '' : dur(v * 1000); }

// One formatter for every integer: toLocaleString makes a new one per call,
// which costs seconds over the tables of a thousand ranks.
const INTEGER = new Intl.NumberFormat('en-US');

export function num(v, digits = 2) {
  if (v == null) return '';
  if (typeof v !== 'number') return String(v);
  return Number.isInteger(v) ? INTEGER.format(v) : v.toFixed(digits);
}

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
}

export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

// A stable colour per name, so one kernel looks the same on every rank.
export function colorOf(name, cat) {
  if (name && /nccl|all_?reduce|all_?gather|reduce_?scatter|broadcast/i.test(name)) return 'hsl(14, 80%, 58%)';
  if (name && /^Memcpy|^Memset|cudaMemcpy/i.test(name)) return 'hsl(140, 45%, 52%)';
  let h = 0;
  const s = name || String(cat);
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return `hsl(${200 + (h % 80)}, 55%, ${52 + (h >> 8) % 16}%)`;
}

// Sorted ranks as a ?ranks= list and for people: "0-40,517".
export function rankList(ranks) {
  const s = [...ranks].sort((a, b) => a - b), out = [];
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : String(s[i]));
    i = j + 1;
  }
  return out.join(',');
}

// A round step (1, 2 or 5 times a power of ten) of at least raw: axis ticks.
export function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
