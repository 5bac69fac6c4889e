// "Show surrounding events" under an expanded hit: the events just before
// and after it from the same host and source (GET /api/v1/context), in time
// order with the event itself marked — what was going on around it, whatever
// the search matched.
import { useState } from 'preact/hooks';
import { context } from '../../api/search';
import type { Hit } from '../../api/types';
import { useRequest } from '../../hooks/useRequest';
import { formatTime } from '../../lib/time';
import { ErrorBox } from '../ErrorBox/ErrorBox';

/** Events asked for on each side. */
export const CONTEXT_N = 5;

/** The text of a context row: `message`, else the event's own fields. */
function text(ev: Record<string, unknown>): string {
  const m = ev['message'];
  return typeof m === 'string' ? m : JSON.stringify(Object.fromEntries(Object.entries(ev).filter(([k]) => !k.startsWith('@'))));
}

/** `host X and source Y`, leaving out what the event does not have. */
export function origin(hit: Hit): string {
  const parts = (['@host', '@source'] as const).filter((k) => typeof hit.event[k] === 'string' && hit.event[k] !== '').map((k) => `${k.slice(1)} ${String(hit.event[k])}`);
  return parts.length > 0 ? parts.join(' and ') : 'all sources';
}

function Row({ hit, anchor }: { hit: Hit; anchor?: boolean }) {
  return (
    <tr class={anchor ? 'context-anchor' : 'context-row'} data-id={hit.id} aria-current={anchor ? 'true' : undefined}>
      <td class="time-col">{formatTime(Date.parse(String(hit.event['@timestamp'] ?? '')))}</td>
      <td>{text(hit.event)}</td>
    </tr>
  );
}

/** The button, then the surrounding events. */
export function SurroundingEvents({ hit }: { hit: Hit }) {
  const [shown, setShown] = useState(false);
  const ctx = useRequest(shown ? hit.id : null, (signal) => context(hit, CONTEXT_N, signal));
  if (!shown) {
    return (
      <button type="button" class="show-context" onClick={() => setShown(true)}>
        Show surrounding events
      </button>
    );
  }
  const d = ctx.data;
  return (
    <div class="context">
      <p class="muted">
        {CONTEXT_N} events before and after, from {origin(hit)}
        {ctx.loading ? ' — loading…' : ''}
      </p>
      <ErrorBox error={ctx.error} />
      {d ? (
        <table aria-label="Surrounding events">
          <tbody>
            {d.before.map((h) => (
              <Row key={h.id} hit={h} />
            ))}
            <Row hit={d.event} anchor />
            {d.after.map((h) => (
              <Row key={h.id} hit={h} />
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
