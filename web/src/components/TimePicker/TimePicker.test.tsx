import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RECENT_RANGES } from '../../lib/recent';
import { toLocalInput } from '../../lib/time';
import { TimePicker } from './TimePicker';

let el: HTMLElement;
afterEach(() => {
  render(null, el);
  el.remove();
});

function open(onChange: (r: { from: string; to: string }) => void): void {
  el = document.createElement('div');
  document.body.appendChild(el);
  act(() => render(<TimePicker value={{ from: 'now-15m', to: 'now' }} onChange={onChange} />, el));
  act(() => (el.querySelector('button[aria-haspopup]') as HTMLButtonElement).click());
}

function setInput(name: string, v: string): void {
  const i = el.querySelector(`input[name=${name}]`) as HTMLInputElement;
  act(() => {
    i.value = v;
    i.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

describe('TimePicker', () => {
  it('offers relative ranges', () => {
    const onChange = vi.fn();
    open(onChange);
    const b = [...el.querySelectorAll('.relative-list button')].find((x) => x.textContent === 'Last 24 hours');
    act(() => (b as HTMLButtonElement).click());
    expect(onChange).toHaveBeenCalledWith({ from: 'now-24h', to: 'now' });
    expect(el.querySelector('[role=dialog]')).toBeNull();
  });

  it('applies an absolute range and rejects a reversed one', () => {
    const onChange = vi.fn();
    open(onChange);
    const f = Date.UTC(2024, 0, 1, 10, 0, 0);
    const t = Date.UTC(2024, 0, 1, 11, 0, 0);
    setInput('from', toLocalInput(t));
    setInput('to', toLocalInput(f));
    act(() => {
      (el.querySelector('.absolute-form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    expect(onChange).not.toHaveBeenCalled();
    expect(el.querySelector('.field-error')?.textContent).toBe('The end must be after the start.');
    setInput('from', toLocalInput(f));
    setInput('to', toLocalInput(t));
    act(() => {
      (el.querySelector('.absolute-form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    expect(onChange).toHaveBeenCalledWith({ from: '2024-01-01T10:00:00.000Z', to: '2024-01-01T11:00:00.000Z' });
  });

  it('applies a typed relative range, says why a bad one is refused, and lists it under recently used', () => {
    localStorage.removeItem(RECENT_RANGES);
    const onChange = vi.fn();
    open(onChange);
    setInput('typed', 'now-2h to now-3h');
    act(() => {
      (el.querySelector('.typed-form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    expect(onChange).not.toHaveBeenCalled();
    expect(el.querySelector('.field-error')?.textContent).toContain('now-7d to now-1d');
    setInput('typed', 'now-2h');
    act(() => {
      (el.querySelector('.typed-form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    expect(onChange).toHaveBeenCalledWith({ from: 'now-2h', to: 'now' });
    act(() => (el.querySelector('button[aria-haspopup]') as HTMLButtonElement).click());
    const recentButtons = [...el.querySelectorAll('[aria-label="Recently used ranges"] button')];
    expect(recentButtons.map((b) => b.textContent)).toEqual(['Since now-2h']);
    expect([...el.querySelectorAll('.relative-list button')].map((b) => b.textContent)).toContain('Last 90 days');
    expect([...el.querySelectorAll('.relative-list button')].map((b) => b.textContent)).toContain('This week');
  });

  it('shifts earlier and zooms out; later is off at now', () => {
    const onChange = vi.fn();
    open(onChange);
    act(() => (el.querySelector('[aria-label="Zoom out"]') as HTMLButtonElement).click());
    expect(onChange).toHaveBeenLastCalledWith({ from: 'now-30m', to: 'now' });
    expect((el.querySelector('[aria-label="Later"]') as HTMLButtonElement).disabled).toBe(true);
    const before = Date.now();
    act(() => (el.querySelector('[aria-label="Earlier"]') as HTMLButtonElement).click());
    const r = onChange.mock.lastCall?.[0] as { from: string; to: string };
    const len = Date.parse(r.to) - Date.parse(r.from);
    expect(len).toBe(900_000);
    expect(Math.abs(Date.parse(r.to) - (before - 900_000))).toBeLessThan(1000);
  });
});
