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

/** The fields every stored event has (docs/specs/ui-api.md §8). */
export const IDENTITY_FIELDS = ['@timestamp', '@group', '@subgroup', '@host', '@source'];

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/** The known name closest to `name` (at most 2 edits, or a case change). */
export function closest(name: string, known: string[]): string | null {
  let best: string | null = null;
  let bestD = 3;
  for (const k of known) {
    const d = k.toLowerCase() === name.toLowerCase() ? 0.5 : distance(name, k);
    if (d < bestD) [best, bestD] = [k, d];
  }
  return best;
}

/**
 * Why a query may have found nothing, from its text and the fields the
 * caller's events in range have (issue 22): a field no event has (with the
 * closest known name), and lower-case `and` / `or` / `not`, which are
 * searched as words — operators are upper-case.
 */
export function queryHints(query: string, known: string[]): string[] {
  // Quoted phrases are text, not syntax.
  const bare = query.replace(/"(?:[^"\\]|\\.)*"/g, ' ');
  const hints: string[] = [];
  const names = new Set([...IDENTITY_FIELDS, ...known]);
  const seen = new Set<string>();
  for (const m of bare.matchAll(/(?:^|[\s(!+-])([A-Za-z_@][\w.@-]*):(\S*)/g)) {
    const field = m[1] === '_exists_' ? (m[2] ?? '').replace(/\)+$/, '') : (m[1] ?? '');
    if (!field || names.has(field) || seen.has(field)) continue;
    seen.add(field);
    const near = closest(field, known);
    hints.push(`No event in this time range has the field “${field}”${near ? ` — did you mean “${near}”?` : '.'}`);
  }
  for (const m of bare.matchAll(/(?:^|\s)(and|or|not)(?=\s)/g)) {
    const op = m[1] ?? '';
    if (seen.has(op)) continue;
    seen.add(op);
    hints.push(`“${op}” is searched as a word: operators are upper-case (${op.toUpperCase()}).`);
  }
  // Free words (not `field:value`, not an operator) search `message` only.
  const words = bare
    .replace(/(?:^|[\s(!+-])[A-Za-z_@][\w.@-]*:(?:\[[^\]]*\]|\{[^}]*\}|\S*)/g, ' ')
    .split(/[\s()]+/)
    .filter((w) => w !== '' && !/^(AND|OR|NOT|and|or|not|&&|\|\||[-+!*])$/.test(w));
  if (words.length > 0) {
    hints.push(`Words without a field (${words.map((w) => `“${w}”`).join(', ')}) are searched in message only; to search another field, write field:word.`);
  }
  return hints;
}

/**
 * `query` with each free word or phrase (searched in `message` only) made to
 * search every string field given as well — `vault` becomes `(message:vault
 * OR service:vault OR …)` — the one-click "search all fields" of issue 22.
 * `fields` are the caller's string fields in range (identity fields and names
 * that would need quoting are left out). `null` when the query has no free
 * word, or has a range (`[a TO b]`), which this rewriting does not read.
 */
export function allFieldsQuery(query: string, fields: string[]): string | null {
  if (/[[\]{}]/.test(query.replace(/"(?:[^"\\]|\\.)*"/g, ''))) return null;
  const others = fields.filter((f) => f !== 'message' && /^[A-Za-z_][\w.-]*$/.test(f));
  let free = 0;
  const out = query.replace(/[A-Za-z_@][\w.@-]*:(?:"(?:[^"\\]|\\.)*"|[^\s()]*)|"(?:[^"\\]|\\.)*"|[()]|[^\s()]+/g, (tok) => {
    const m = /^([-+!]*)(.*)$/s.exec(tok);
    const prefix = m?.[1] ?? '';
    const core = m?.[2] ?? tok;
    const isField = /^[A-Za-z_@][\w.@-]*:/.test(core);
    if (isField || core === '' || core === '(' || core === ')' || /^(AND|OR|NOT|&&|\|\||\*)$/.test(core)) return tok;
    free += 1;
    return `${prefix}(${['message', ...others].map((f) => `${f}:${core}`).join(' OR ')})`;
  });
  return free > 0 ? out : null;
}
