// Every field of one event, with actions per field: filter on its value,
// exclude it, add/remove it as a result column.
import type { EventDoc } from '../../api/types';
import { flatten, valueText } from '../../lib/format';
import { filterText } from '../../lib/query';

/** Props of [`EventDetail`]. */
export interface EventDetailProps {
  event: EventDoc;
  columns: string[];
  onFilter: (field: string, value: string, negate: boolean) => void;
  onToggleColumn: (field: string) => void;
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
                  <button type="button" class="link value-link" title="Filter on this value" onClick={() => onFilter(path, text, false)}>
                    {text}
                  </button>
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
