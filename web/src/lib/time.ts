// Time ranges as the API takes them: relative (`now-15m` … `now`) or
// absolute (RFC 3339), and their display.

/** A time range in the API's words. */
export interface TimeRange {
  from: string;
  to: string;
}

/** The relative ranges offered by the time picker. */
export const RELATIVE: readonly { label: string; from: string }[] = [
  { label: 'Last 5 minutes', from: 'now-5m' },
  { label: 'Last 15 minutes', from: 'now-15m' },
  { label: 'Last 1 hour', from: 'now-1h' },
  { label: 'Last 4 hours', from: 'now-4h' },
  { label: 'Last 24 hours', from: 'now-24h' },
  { label: 'Last 7 days', from: 'now-7d' },
  { label: 'Last 30 days', from: 'now-30d' },
];

/** The default range. */
export const DEFAULT_RANGE: TimeRange = { from: 'now-15m', to: 'now' };

const UNIT_MS: Record<string, number> = { s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5 };

/** Epoch ms of a bound (`now`, `now-15m`, epoch ms, RFC 3339), or NaN. */
export function resolve(bound: string, now = Date.now()): number {
  const s = bound.trim();
  const rel = /^now(?:([+-])(\d+)([smhdw]))?$/.exec(s);
  if (rel) {
    if (!rel[1]) return now;
    const n = Number(rel[2]) * (UNIT_MS[rel[3] ?? ''] ?? NaN);
    return rel[1] === '-' ? now - n : now + n;
  }
  if (/^\d+$/.test(s)) return Number(s);
  return Date.parse(s);
}

/** Whether a range is relative to now (it moves with auto-refresh). */
export function isRelative(r: TimeRange): boolean {
  return r.from.startsWith('now') || r.to.startsWith('now');
}

/** Absolute range (RFC 3339) between two epoch ms. */
export function absolute(fromMs: number, toMs: number): TimeRange {
  return { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() };
}

/** A human label for a range. */
export function label(r: TimeRange): string {
  if (r.to === 'now') {
    const known = RELATIVE.find((x) => x.from === r.from);
    if (known) return known.label;
    return `Since ${r.from}`;
  }
  return `${formatTime(resolve(r.from))} → ${formatTime(resolve(r.to))}`;
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** Where times are shown: the browser's zone or UTC (a user setting, kept
 * in this browser). */
export type Zone = 'local' | 'utc';

const ZONE_KEY = 'sluice.timeZone';

/** The chosen zone (local unless UTC was chosen). */
export function timeZone(): Zone {
  try {
    return globalThis.localStorage?.getItem(ZONE_KEY) === 'utc' ? 'utc' : 'local';
  } catch {
    return 'local';
  }
}

/** Chooses the zone for every page of this browser. */
export function setTimeZone(z: Zone): void {
  try {
    localStorage.setItem(ZONE_KEY, z);
  } catch {
    // Storage disabled: the choice lasts for this page only.
  }
  zoneOverride = z;
}
let zoneOverride: Zone | null = null;
const zone = (): Zone => zoneOverride ?? timeZone();

/** The fields of `ms` in a zone. */
function parts(ms: number, z: Zone): { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number; offsetMin: number } {
  const t = new Date(ms);
  if (z === 'utc') return { y: t.getUTCFullYear(), mo: t.getUTCMonth() + 1, d: t.getUTCDate(), h: t.getUTCHours(), mi: t.getUTCMinutes(), s: t.getUTCSeconds(), ms: t.getUTCMilliseconds(), offsetMin: 0 };
  return { y: t.getFullYear(), mo: t.getMonth() + 1, d: t.getDate(), h: t.getHours(), mi: t.getMinutes(), s: t.getSeconds(), ms: t.getMilliseconds(), offsetMin: -t.getTimezoneOffset() };
}

/** The zone as written after a time: `UTC`, or the local offset `+01:00`. */
export function zoneLabel(ms: number, z: Zone = zone()): string {
  if (z === 'utc') return 'UTC';
  const off = parts(ms, z).offsetMin;
  return `${off < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
}

/** `2024-05-01 12:30:05.123 UTC` (or `… +02:00` in local time): one
 * 24-hour format everywhere, with its zone. */
export function formatTime(ms: number, z: Zone = zone()): string {
  if (!Number.isFinite(ms)) return '—';
  const p = parts(ms, z);
  return `${p.y}-${pad(p.mo)}-${pad(p.d)} ${pad(p.h)}:${pad(p.mi)}:${pad(p.s)}.${pad(p.ms, 3)} ${zoneLabel(ms, z)}`;
}

/** A time-axis tick: `HH:mm` (with seconds under a minute's step, the date
 * from a day's step), 24-hour, in the chosen zone. */
export function axisLabel(ms: number, stepMs: number, z: Zone = zone()): string {
  const p = parts(ms, z);
  if (stepMs >= 864e5) return `${pad(p.mo)}-${pad(p.d)}`;
  if (stepMs < 6e4) return `${pad(p.h)}:${pad(p.mi)}:${pad(p.s)}`;
  return `${pad(p.h)}:${pad(p.mi)}`;
}

/** Value for an `<input type="datetime-local">` (local time, seconds). */
export function toLocalInput(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Epoch ms of an `<input type="datetime-local">` value (local time). */
export function fromLocalInput(v: string): number {
  return v ? new Date(v).getTime() : NaN;
}
