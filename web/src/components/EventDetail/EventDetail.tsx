// Every field of one event, with actions per field: filter on its value,
// exclude it, add/remove it as a result column.
import type { EventDoc } from '../../api/types';
import { flatten, valueText } from '../../lib/format';
import { filterText } from '../../lib/query';
import { formatTime } from '../../lib/time';

/** Props of [`EventDetail`]. */
export interface EventDetailProps {
  event: EventDoc;
  columns: string[];
  onFilter: (field: string, value: string, negate: boolean) => void;
  onToggleColumn: (field: string) => void;
}

/** The filter texts of an array's elements when every one is a scalar
 * (`null` for anything else, and for an empty array). */
export function elementTexts(v: unknown): string[] | null {
  if (!Array.isArray(v) || v.length === 0) return null;
  const texts = v.map(filterText);
  return texts.every((t): t is string => t !== null) ? texts : null;
}

/** The expanded event. */
export function EventDetail({ event, columns, onFilter, onToggleColumn }: EventDetailProps) {
  return (
    <table class="event-detail">
      <tbody>
        {flatten(event).map(([path, v]) => {
          const text = filterText(v);
          const shown = columns.includes(path);
          return (
            <tr key={path} data-field={path}>
              <th scope="row">{path}</th>
              <td class="actions">
                {text !== null ? (
                  <>
                    <button type="button" title={`Filter on ${path}`} aria-label={`Filter on ${path} = ${text}`} onClick={() => onFilter(path, text, false)}>
                      ⊕
                    </button>
                    <button type="button" title={`Exclude ${path}`} aria-label={`Exclude ${path} = ${text}`} onClick={() => onFilter(path, text, true)}>
                      ⊖
                    </button>
                  </>
                ) : null}
                <button
                  type="button"
                  title={shown ? 'Remove column' : 'Add as column'}
                  aria-label={`${shown ? 'Remove' : 'Add'} column ${path}`}
                  aria-pressed={shown}
                  onClick={() => onToggleColumn(path)}
                >
                  ▥
                </button>
              </td>
              <td class="value">
                {text !== null ? (
                  <button type="button" class="link value-link" title={path === '@timestamp' ? `${text} — filter on this value` : 'Filter on this value'} onClick={() => onFilter(path, text, false)}>
                    {path === '@timestamp' ? formatTime(Date.parse(text)) : text}
                  </button>
                ) : elementTexts(v) ? (
                  // An array of scalars: each element filters (a field matches when one of its values does).
                  <span class="array-values">
                    {(elementTexts(v) ?? []).map((t, i) => (
                      <span key={i} class="array-value">
                        <button type="button" class="link value-link" title={`Filter on ${path} = ${t}`} onClick={() => onFilter(path, t, false)}>
                          {t}
                        </button>
                        <button type="button" class="link" title={`Exclude ${path} = ${t}`} aria-label={`Exclude ${path} = ${t}`} onClick={() => onFilter(path, t, true)}>
                          ⊖
                        </button>
                      </span>
                    ))}
                  </span>
                ) : (
                  <code>{valueText(v)}</code>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
