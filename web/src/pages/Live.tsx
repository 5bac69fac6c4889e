// The live feed: new events of a query as they are stored, newest on top,
// pausable, with the arrival rate.
import { QueryBar } from '../components/QueryBar/QueryBar';
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { identity, summary } from '../components/ResultList/ResultList';
import { TAIL_KEEP, useTail } from '../hooks/useTail';
import { navigate, urlOf, type Loc } from '../lib/router';
import { formatTime } from '../lib/time';

/** The live page. */
export function LivePage({ loc }: { loc: Loc }) {
  const q = loc.params.get('q') ?? '';
  const t = useTail(q);
  return (
    <main id="main" class="live-page" tabIndex={-1}>
      <div class="toolbar">
        <QueryBar value={q} onSubmit={(next) => navigate(urlOf('/live', { q: next }))} placeholder="Filter the live feed… (press / to focus)" />
        <button type="button" aria-pressed={t.paused} onClick={() => t.setPaused(!t.paused)}>
          {t.paused ? 'Resume' : 'Pause'}
        </button>
        <button type="button" onClick={t.clear}>
          Clear
        </button>
      </div>
      <div class="live-status" aria-live="polite">
        <span class={`dot ${t.connected ? 'on' : 'off'}`} aria-hidden="true" />
        <span id="live-connection">{t.connected ? 'connected' : t.stopped ? (t.error?.type === 'query_parse_error' ? 'stopped: fix the filter' : 'stopped') : 'connecting…'}</span>
        {' · '}
        <span id="live-rate" data-rate={t.rate}>
          {t.rate.toFixed(1)} events/s
        </span>
        {' · '}
        <span id="live-received" data-count={t.received}>
          {t.received} received
        </span>
        {t.paused ? <strong> · paused (events are counted, not shown)</strong> : null}
      </div>
      <ErrorBox error={t.error} />
      <ol class="live-list" aria-label={`Newest ${TAIL_KEEP} live events`}>
        {t.hits.map((h) => (
          <li key={h.id} class="live-event">
            <time>{formatTime(Date.parse(String(h.event['@timestamp'] ?? '')))}</time>{' '}
            <span class="identity">{identity(h.event)}</span>{' '}
            <span class="msg">{summary(h.event)}</span>
          </li>
        ))}
      </ol>
      {t.hits.length === 0 ? <p class="empty">Waiting for new events{q ? ' matching this query' : ''}…</p> : null}
    </main>
  );
}
