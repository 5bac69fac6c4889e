// The time range: a button with the current range opens relative choices
// (last 5 minutes … 1 year, today, this week), a typed range (`now-2h`,
// `now-7d to now-1d`), the ranges used recently in this browser and an
// absolute from/to form; beside it, earlier / later (shift by the range's
// length) and zoom out (twice as long).
import { useEffect, useRef, useState } from 'preact/hooks';
import { useDismiss } from '../../hooks/useDismiss';
import { RECENT_RANGES, recent, remember } from '../../lib/recent';
import { RELATIVE, fromLocalInput, label, parseTyped, resolve, shift, thisWeek, toLocalInput, today, zoomOut, type TimeRange } from '../../lib/time';

/** Props of [`TimePicker`]. */
export interface TimePickerProps {
  value: TimeRange;
  onChange: (r: TimeRange) => void;
}

/** Recently used ranges shown. */
export const RECENT_SHOWN = 5;

/** The ranges picked recently in this browser, newest first. */
export function recentRanges(): TimeRange[] {
  return recent(RECENT_RANGES).flatMap((s) => {
    try {
      const r: unknown = JSON.parse(s);
      if (r && typeof r === 'object' && 'from' in r && 'to' in r && typeof r.from === 'string' && typeof r.to === 'string') return [{ from: r.from, to: r.to }];
    } catch {
      // A foreign value: skipped.
    }
    return [];
  });
}

/** The time picker. */
export function TimePicker({ value, onChange }: TimePickerProps) {
  const [open, setOpen] = useState(false);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [typed, setTyped] = useState('');
  const [err, setErr] = useState('');
  const root = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!open) return;
    setFrom(toLocalInput(resolve(value.from)));
    setTo(toLocalInput(resolve(value.to)));
    setTyped(value.from.startsWith('now') && value.to.startsWith('now') ? (value.to === 'now' ? value.from : `${value.from} to ${value.to}`) : '');
    setErr('');
  }, [open, value.from, value.to]);
  useDismiss(open, root, () => setOpen(false));

  const pick = (r: TimeRange): void => {
    remember(RECENT_RANGES, JSON.stringify(r), RECENT_SHOWN);
    onChange(r);
    setOpen(false);
  };
  const isActive = (r: TimeRange): string => (value.from === r.from && value.to === r.to ? 'active' : '');
  const atNow = resolve(value.to) >= Date.now() - 1000;
  const choice = (r: TimeRange, text: string) => (
    <li key={text}>
      <button type="button" class={isActive(r)} onClick={() => pick(r)}>
        {text}
      </button>
    </li>
  );

  return (
    <div class="time-picker" ref={root}>
      <button type="button" aria-label="Earlier" title="Earlier by the range's length" onClick={() => onChange(shift(value, -1))}>
        ◀
      </button>
      <button type="button" aria-haspopup="dialog" aria-expanded={open} onClick={() => setOpen(!open)}>
        {label(value)} ▾
      </button>
      <button type="button" aria-label="Later" title="Later by the range's length" disabled={atNow} onClick={() => onChange(shift(value, 1))}>
        ▶
      </button>
      <button type="button" aria-label="Zoom out" title="Twice as long" onClick={() => onChange(zoomOut(value))}>
        −
      </button>
      {open ? (
        <div class="popover" role="dialog" aria-label="Time range">
          <ul class="relative-list">
            {RELATIVE.map((r) => choice({ from: r.from, to: 'now' }, r.label))}
            {choice(today(), 'Today')}
            {choice(thisWeek(), 'This week')}
          </ul>
          <div class="time-forms">
            <form
              class="typed-form"
              onSubmit={(e) => {
                e.preventDefault();
                const r = parseTyped(typed);
                if (!r) return setErr('Type now-2h, now-7d to now-1d, or two times around “to”.');
                pick(r);
              }}
            >
              <label>
                Typed range
                <input type="text" name="typed" placeholder="now-2h  or  now-7d to now-1d" spellcheck={false} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
              </label>
              <button type="submit">Apply</button>
            </form>
            <form
              class="absolute-form"
              onSubmit={(e) => {
                e.preventDefault();
                const f = fromLocalInput(from);
                const t = fromLocalInput(to);
                if (!Number.isFinite(f) || !Number.isFinite(t)) return setErr('Enter both times.');
                if (t <= f) return setErr('The end must be after the start.');
                pick({ from: new Date(f).toISOString(), to: new Date(t).toISOString() });
              }}
            >
              <label>
                From
                <input type="datetime-local" step="1" name="from" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
              </label>
              <label>
                To
                <input type="datetime-local" step="1" name="to" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
              </label>
              <button type="submit">Apply</button>
            </form>
            {err ? <p class="field-error">{err}</p> : null}
            <div class="recent-ranges">
              <h3>Recently used</h3>
              <ul class="relative-list" aria-label="Recently used ranges">
                {recentRanges().map((r) => choice(r, label(r)))}
              </ul>
            </div>
          </div>
        </div>
      ) : null}
    </div>
  );
}
