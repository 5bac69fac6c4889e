// Building query strings in the store's language (docs/query-semantics.md).

/** Quotes a value as a phrase: only `"` and `\` need escaping inside one. */
export function phrase(v: string): string {
  return `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The value of an event field as filter text (`null` for objects/arrays). */
export function filterText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

/** `query` with `field:"value"` ANDed to it (or `NOT field:"value"`). */
export function addFilter(query: string, field: string, value: string, negate = false): string {
  const clause = `${negate ? 'NOT ' : ''}${field}:${phrase(value)}`;
  const q = query.trim();
  if (q === '' || q === '*') return clause;
  // Parenthesise an OR so the new clause binds to the whole query.
  const needsParens = /\bOR\b|\|\|/.test(q);
  return `${needsParens ? `(${q})` : q} AND ${clause}`;
}

/** The UTF-16 index of a UTF-8 byte offset (the API's `position`) in `s`. */
export function byteToCharIndex(s: string, bytes: number): number {
  const enc = new TextEncoder();
  let seen = 0;
  let i = 0;
  for (const ch of s) {
    if (seen >= bytes) return i;
    seen += enc.encode(ch).length;
    i += ch.length;
  }
  return s.length;
}
