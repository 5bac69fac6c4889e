// The query input: Enter runs the search; a syntax error from the API is
// shown under the query with a caret at its position (a UTF-8 byte offset,
// converted to a character index).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { byteToCharIndex } from '../../lib/query';

/** Props of [`QueryBar`]. */
export interface QueryBarProps {
  value: string;
  onSubmit: (query: string) => void;
  /** The last search's error; a `query_parse_error` is drawn under the input. */
  error?: ApiError | null;
  placeholder?: string;
  /** Focus the input when `/` is typed anywhere outside another input. */
  slashFocus?: boolean;
}

/** The query bar. */
export function QueryBar({ value, onSubmit, error, placeholder, slashFocus = true }: QueryBarProps) {
  const [text, setText] = useState(value);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => setText(value), [value]);

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
        onSubmit(text);
      }}
    >
      <input
        ref={input}
        type="search"
        name="query"
        aria-label="Query"
        aria-invalid={parseError ? 'true' : 'false'}
        aria-describedby={parseError ? 'query-error' : undefined}
        placeholder={placeholder ?? 'Search… e.g. error AND @host:"web-1"   (press / to focus)'}
        spellcheck={false}
        autocomplete="off"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <button type="submit">Search</button>
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
