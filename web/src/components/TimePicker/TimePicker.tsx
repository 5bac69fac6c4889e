// The time range: a button with the current range opens relative choices
// (last 15 minutes … 30 days) and an absolute from/to form.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useDismiss } from '../../hooks/useDismiss';
import { RELATIVE, fromLocalInput, label, resolve, toLocalInput, type TimeRange } from '../../lib/time';

/** Props of [`TimePicker`]. */
export interface TimePickerProps {
  value: TimeRange;
  onChange: (r: TimeRange) => void;
}

/** The time picker. */
export function TimePicker({ value, onChange }: TimePickerProps) {
  const [open, setOpen] = useState(false);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [err, setErr] = useState('');
  const root = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!open) return;
    setFrom(toLocalInput(resolve(value.from)));
    setTo(toLocalInput(resolve(value.to)));
    setErr('');
  }, [open, value.from, value.to]);
  useDismiss(open, root, () => setOpen(false));

  const pick = (r: TimeRange): void => {
    onChange(r);
    setOpen(false);
  };

  return (
    <div class="time-picker" ref={root}>
      <button type="button" aria-haspopup="dialog" aria-expanded={open} onClick={() => setOpen(!open)}>
        {label(value)} ▾
      </button>
      {open ? (
        <div class="popover" role="dialog" aria-label="Time range">
          <ul class="relative-list">
            {RELATIVE.map((r) => (
              <li key={r.from}>
                <button
                  type="button"
                  class={value.from === r.from && value.to === 'now' ? 'active' : ''}
                  onClick={() => pick({ from: r.from, to: 'now' })}
                >
                  {r.label}
                </button>
              </li>
            ))}
          </ul>
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
            {err ? <p class="field-error">{err}</p> : null}
            <button type="submit">Apply</button>
          </form>
        </div>
      ) : null}
    </div>
  );
}
