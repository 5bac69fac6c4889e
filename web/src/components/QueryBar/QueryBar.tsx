// The query input: Enter runs the search; a syntax error from the API is
// shown under the query with a caret at its position (a UTF-8 byte offset,
// converted to a character index). Given a time range it also suggests
// (issue 22, missing 4): field names, the top values after `field:`, the
// recent queries in an empty bar (↑ ↓ choose, Enter or Tab take, Escape
// closes), and a "?" opens the syntax in short.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { useSuggestions, type Suggestion } from '../../hooks/useSuggestions';
import { byteToCharIndex } from '../../lib/query';
import { RECENT_QUERIES, remember } from '../../lib/recent';
import { applySuggestion, tokenAt } from '../../lib/suggest';
import type { TimeRange } from '../../lib/time';
import { QuerySuggestions } from '../QuerySuggestions/QuerySuggestions';
import { QuerySyntaxHelp } from '../QuerySyntaxHelp/QuerySyntaxHelp';

/** Props of [`QueryBar`]. */
export interface QueryBarProps {
  value: string;
  onSubmit: (query: string) => void;
  /** The last search's error; a `query_parse_error` is drawn under the input. */
  error?: ApiError | null;
  placeholder?: string;
  /** Focus the input when `/` is typed anywhere outside another input. */
  slashFocus?: boolean;
  /** The range field names and top values are suggested from; without
   * one the bar suggests nothing and remembers no queries. */
  range?: TimeRange;
}

/** The query bar. */
export function QueryBar({ value, onSubmit, error, placeholder, slashFocus = true, range }: QueryBarProps) {
  const [text, setText] = useState(value);
  const [caret, setCaret] = useState(value.length);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const input = useRef<HTMLInputElement>(null);
  const moveCaret = useRef<number | null>(null);
  useEffect(() => setText(value), [value]);
  useEffect(() => {
    if (moveCaret.current === null || !input.current) return;
    input.current.setSelectionRange(moveCaret.current, moveCaret.current);
    moveCaret.current = null;
  });

  const token = tokenAt(text, caret);
  const items = useSuggestions(text, token, range, open);
  const shown = open && items.length > 0;

  const run = (typed: string): void => {
    // A taken suggestion leaves a space for the next word: not part of the query.
    const q = typed.trim();
    setOpen(false);
    setActive(-1);
    if (range) remember(RECENT_QUERIES, q);
    onSubmit(q);
  };
  const pick = (s: Suggestion): void => {
    if (s.kind === 'recent' || !token) {
      setText(s.value);
      run(s.value);
      return;
    }
    const next = applySuggestion(text, token, s.value);
    setText(next.text);
    setCaret(next.caret);
    setActive(-1);
    moveCaret.current = next.caret;
  };
  const onKeyDown = (e: KeyboardEvent): void => {
    if (!shown) {
      if (e.key === 'ArrowDown') setOpen(true);
      return;
    }
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const n = items.length;
      setActive((a) => (e.key === 'ArrowDown' ? (a + 1) % n : (a <= 0 ? n - 1 : a - 1)));
    } else if ((e.key === 'Enter' || e.key === 'Tab') && active >= 0 && active < items.length) {
      e.preventDefault();
      const s = items[active];
      if (s) pick(s);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      setOpen(false);
    }
  };
  const track = (e: Event): void => setCaret((e.currentTarget as HTMLInputElement).selectionStart ?? text.length);

  useEffect(() => {
    if (!slashFocus) return undefined;
    const onKey = (e: KeyboardEvent): void => {
      const t = e.target as HTMLElement | null;
      const editing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
      if (e.key === '/' && !editing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        input.current?.focus();
        input.current?.select();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [slashFocus]);

  const parseError = error?.type === 'query_parse_error' ? error : null;
  const at = parseError ? byteToCharIndex(value, parseError.position ?? 0) : 0;
  return (
    <form
      class="query-bar"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        run(text);
      }}
    >
      <input
        ref={input}
        type="search"
        name="query"
        aria-label="Query"
        aria-invalid={parseError ? 'true' : 'false'}
        aria-describedby={parseError ? 'query-error' : undefined}
        aria-autocomplete={range ? 'list' : undefined}
        aria-controls={shown ? 'query-suggestions' : undefined}
        aria-activedescendant={shown && active >= 0 ? `query-suggestions-${active}` : undefined}
        placeholder={placeholder ?? 'Search… e.g. error AND @host:"web-1"   (press / to focus)'}
        spellcheck={false}
        autocomplete="off"
        value={text}
        onInput={(e) => {
          setText(e.currentTarget.value);
          setCaret(e.currentTarget.selectionStart ?? e.currentTarget.value.length);
          setOpen(true);
          setActive(-1);
        }}
        onKeyDown={onKeyDown}
        onKeyUp={(e) => {
          if (e.key === 'ArrowLeft' || e.key === 'ArrowRight' || e.key === 'Home' || e.key === 'End') track(e);
        }}
        onClick={track}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
      />
      {shown ? <QuerySuggestions id="query-suggestions" items={items} active={active} onPick={pick} /> : null}
      <button type="submit">Search</button>
      {range ? <QuerySyntaxHelp /> : null}
      {parseError ? (
        <div id="query-error" class="query-error" role="alert" data-position={at}>
          <pre aria-hidden="true">
            {value}
            {'\n'}
            {' '.repeat(at)}^
          </pre>
          <span>{parseError.message}</span>
        </div>
      ) : null}
    </form>
  );
}
