// Number, time and duration formatting for the tables and the audit line.

export function num(v, digits = 4) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  return Number(v.toPrecision(digits)).toString();
}

export function int(v) {
  if (v === null || v === undefined) return '–';
  return Number(v).toLocaleString('en-US');
}

export function pct(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  return (100 * v).toFixed(digits) + ' %';
}

export function duration(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return '–';
  s = Math.max(0, Math.round(s));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60), sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
}

export function time(unix) {
  if (unix === null || unix === undefined) return '–';
  const d = new Date(unix * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
