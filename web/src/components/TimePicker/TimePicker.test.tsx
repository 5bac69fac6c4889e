import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
  act(() => (el.querySelector('button') as HTMLButtonElement).click());
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
});
