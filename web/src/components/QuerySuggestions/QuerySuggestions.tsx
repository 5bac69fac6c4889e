// The list under the query bar: field names, top values or recent
// queries; the active one is highlighted, a press picks one (mousedown, so
// the input keeps its focus).
import type { Suggestion } from '../../hooks/useSuggestions';
import { compact } from '../../lib/format';

/** Props of [`QuerySuggestions`]. */
export interface QuerySuggestionsProps {
  id: string;
  items: Suggestion[];
  active: number;
  onPick: (s: Suggestion) => void;
}

const HEADING: Record<Suggestion['kind'], string> = { field: 'Fields', value: 'Top values', recent: 'Recent queries' };

/** The suggestion list (a listbox). */
export function QuerySuggestions({ id, items, active, onPick }: QuerySuggestionsProps) {
  const kind = items[0]?.kind ?? 'field';
  return (
    <ul id={id} class="query-suggestions" role="listbox" aria-label={HEADING[kind]}>
      <li class="muted suggestion-heading" role="presentation">
        {HEADING[kind]}
      </li>
      {items.map((s, i) => (
        <li
          key={`${s.kind}:${s.value}`}
          id={`${id}-${i}`}
          role="option"
          aria-selected={i === active}
          class={`suggestion suggestion-${s.kind}${i === active ? ' active' : ''}`}
          onMouseDown={(e) => {
            e.preventDefault();
            onPick(s);
          }}
        >
          <span class="v">{s.value}</span>
          {s.count !== undefined ? <span class="n">{compact(s.count)}</span> : null}
        </li>
      ))}
    </ul>
  );
}
