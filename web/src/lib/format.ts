// Number and value formatting.

/** 1234567 → "1.23M". */
export function compact(n: number): string {
  if (!Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a >= 1e9) return `${(n / 1e9).toFixed(2)}G`;
  if (a >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

/** 17123 → "17,123": a count to the unit, grouped for reading. */
export function exact(n: number): string {
  return Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: 0 }) : '—';
}

/** Bytes as KiB/MiB/GiB. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i] ?? ''}`;
}

/** How long ago a Unix time in seconds was, in the largest whole unit:
 * "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago"; "never" for 0. */
export function ago(unixSeconds: number, nowMs: number = Date.now()): string {
  if (!unixSeconds) return 'never';
  const s = Math.max(0, Math.floor(nowMs / 1000 - unixSeconds));
  if (s < 1) return 'just now';
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.floor(s / 60)} min ago`;
  if (s < 172800) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** A field value as one line of text. */
export function valueText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** Every leaf of an event as `[dotted.path, value]`, in document order. */
export function flatten(obj: Record<string, unknown>, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const [k, v] of Object.entries(obj)) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(...flatten(v as Record<string, unknown>, path));
    else out.push([path, v]);
  }
  return out;
}

/** The value at a dotted path of an event (keys may themselves contain dots). */
export function getPath(obj: Record<string, unknown>, path: string): unknown {
  if (path in obj) return obj[path];
  const dot = path.indexOf('.');
  if (dot < 0) return undefined;
  for (let i = dot; i >= 0; i = path.indexOf('.', i + 1)) {
    const head = obj[path.slice(0, i)];
    if (head !== null && typeof head === 'object' && !Array.isArray(head)) {
      const v = getPath(head as Record<string, unknown>, path.slice(i + 1));
      if (v !== undefined) return v;
    }
  }
  return undefined;
}
