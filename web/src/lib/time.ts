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
  { label: 'Last 90 days', from: 'now-90d' },
  { label: 'Last 1 year', from: 'now-365d' },
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

/** Local midnight of today (`now`'s day), as a range to now. */
export function today(now = Date.now()): TimeRange {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  return { from: d.toISOString(), to: 'now' };
}

/** Local midnight of this week's Monday, as a range to now. */
export function thisWeek(now = Date.now()): TimeRange {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  d.setDate(d.getDate() - ((d.getDay() + 6) % 7));
  return { from: d.toISOString(), to: 'now' };
}

/**
 * A typed range: `now-2h` (to now), `now-7d to now-1d`, or two RFC 3339
 * times around ` to `; null when a bound does not parse or the end is not
 * after the start.
 */
export function parseTyped(text: string, now = Date.now()): TimeRange | null {
  const [a = '', b = 'now', ...rest] = text.trim().split(/\s+to\s+/i);
  if (rest.length > 0 || a === '') return null;
  const f = resolve(a, now);
  const t = resolve(b, now);
  if (!Number.isFinite(f) || !Number.isFinite(t) || t <= f) return null;
  return { from: a.trim(), to: b.trim() };
}

/** The range one length earlier (`dir` -1) or later (+1), absolute. */
export function shift(r: TimeRange, dir: -1 | 1, now = Date.now()): TimeRange {
  const f = resolve(r.from, now);
  const t = resolve(r.to, now);
  const len = t - f;
  return absolute(f + dir * len, t + dir * len);
}

/** Twice as long: a relative range to now stays relative (`now-1h` → `now-2h`);
 * another grows by half its length on each side, never past now. */
export function zoomOut(r: TimeRange, now = Date.now()): TimeRange {
  const rel = /^now-(\d+)([smhdw])$/.exec(r.from);
  if (rel && r.to === 'now') return { from: `now-${Number(rel[1]) * 2}${rel[2] ?? ''}`, to: 'now' };
  const f = resolve(r.from, now);
  const t = resolve(r.to, now);
  const half = (t - f) / 2;
  const end = Math.min(t + half, now);
  return absolute(f - half - (t + half - end), end);
}

/** A human label for a range. */
export function label(r: TimeRange, now = Date.now()): string {
  if (r.to === 'now') {
    const known = RELATIVE.find((x) => x.from === r.from);
    if (known) return known.label;
    if (r.from === today(now).from) return 'Today';
    if (r.from === thisWeek(now).from) return 'This week';
    if (r.from.startsWith('now')) return `Since ${r.from}`;
    return `Since ${formatTime(resolve(r.from))}`;
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
