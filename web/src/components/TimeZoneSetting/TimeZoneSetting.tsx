// The time zone every time in the UI is shown in: the browser's or UTC,
// kept in this browser (issue 22: one format, the zone always written).
import { useState } from 'preact/hooks';
import { formatTime, setTimeZone, timeZone, type Zone } from '../../lib/time';

/** The browser's zone name (`Europe/Berlin`), when it says. */
function localName(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'this browser';
  } catch {
    return 'this browser';
  }
}

/** The setting, as a card of the account page. */
export function TimeZoneSetting() {
  const [z, setZ] = useState<Zone>(timeZone);
  const now = Date.now();
  return (
    <section class="card" aria-label="Time zone">
      <h2>Time zone</h2>
      <label>
        Show times in{' '}
        <select
          name="time-zone"
          aria-label="Show times in"
          value={z}
          onChange={(e) => {
            const v = e.currentTarget.value === 'utc' ? 'utc' : 'local';
            setTimeZone(v);
            setZ(v);
          }}
        >
          <option value="local">local time ({localName()})</option>
          <option value="utc">UTC</option>
        </select>
      </label>
      <p class="muted">
        Now: <span id="time-zone-example">{formatTime(now, z)}</span>
      </p>
    </section>
  );
}
