// Query autocomplete (issue 22, missing 4): which word the caret is in —
// a field name being typed, or the value after `field:` — and the query
// with a suggestion put in its place.

/** The word under the caret and what it is. */
export type Token =
  | { kind: 'field'; prefix: string; start: number; end: number }
  | { kind: 'value'; field: string; prefix: string; start: number; end: number };

const OPERATORS = new Set(['AND', 'OR', 'NOT']);

/** The token ending at `caret` in `text`, or null (inside a phrase, after a space, an operator). */
export function tokenAt(text: string, caret: number): Token | null {
  const before = text.slice(0, caret);
  // `field:` then the value typed so far (a phrase may be open: `field:"ap`).
  const m = /(?:^|[\s(!+-])([A-Za-z_@][\w.@-]*):("?[^\s"()]*)$/.exec(before);
  if (m) {
    const field = m[1] ?? '';
    const raw = m[2] ?? '';
    const start = caret - raw.length;
    let end = caret;
    while (end < text.length && !/[\s()]/.test(text[end] ?? '')) end++;
    return { kind: 'value', field, prefix: raw.replace(/^"/, ''), start, end };
  }
  // Inside an open phrase of free text (an odd number of unescaped quotes): nothing to offer.
  const quotes = (before.replace(/\\"/g, '').match(/"/g) ?? []).length;
  if (quotes % 2 === 1) return null;
  const w = /(?:^|[\s(!+-])([A-Za-z_@][\w.@-]*)$/.exec(before);
  if (!w) return null;
  const prefix = w[1] ?? '';
  if (OPERATORS.has(prefix)) return null;
  let end = caret;
  while (end < text.length && /[\w.@-]/.test(text[end] ?? '')) end++;
  if (text[end] === ':') return null;
  return { kind: 'field', prefix, start: caret - prefix.length, end };
}

/** Field names that start with (then contain) `prefix`, case-insensitive, at most `max`. */
export function matchFields(prefix: string, names: string[], max = 8): string[] {
  const p = prefix.toLowerCase();
  const starts = names.filter((n) => n.toLowerCase().startsWith(p));
  const contains = names.filter((n) => !n.toLowerCase().startsWith(p) && n.toLowerCase().includes(p));
  return [...starts, ...contains].slice(0, max);
}

/** The text a suggestion puts in: `field:` for a field, a phrase for a value. */
export function suggestionText(t: Token, s: string): string {
  if (t.kind === 'field') return `${s}:`;
  return /^[\w.@-]+$/.test(s) ? s : `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** `text` with the token replaced by `s`; returns the new text and caret. */
export function applySuggestion(text: string, t: Token, s: string): { text: string; caret: number } {
  const ins = suggestionText(t, s);
  const tail = text.slice(t.end);
  const sep = t.kind === 'value' && !tail.startsWith(' ') ? ' ' : '';
  const next = text.slice(0, t.start) + ins + sep + tail;
  return { text: next, caret: t.start + ins.length + sep.length };
}
