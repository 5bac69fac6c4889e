import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { axisLabel, formatTime, timeZone } from '../../lib/time';
import { TimeZoneSetting } from './TimeZoneSetting';

afterEach(() => localStorage.clear());

describe('time zone', () => {
  it('writes one 24-hour format with its zone', () => {
    const ms = Date.UTC(2026, 10, 26, 22, 51, 17, 117);
    expect(formatTime(ms, 'utc')).toBe('2026-11-26 22:51:17.117 UTC');
    expect(formatTime(ms, 'local')).toMatch(/^2026-11-2\d \d\d:\d\d:17\.117 [+-]\d\d:\d\d$/);
    expect(axisLabel(ms, 60_000, 'utc')).toBe('22:51');
    expect(axisLabel(ms, 1_000, 'utc')).toBe('22:51:17');
    expect(axisLabel(ms, 86_400_000, 'utc')).toBe('11-26');
  });

  it('is chosen on the account page and kept in the browser', () => {
    expect(timeZone()).toBe('local');
    const el = document.createElement('div');
    act(() => render(<TimeZoneSetting />, el));
    const select = el.querySelector('select') as HTMLSelectElement;
    act(() => {
      select.value = 'utc';
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
    expect(timeZone()).toBe('utc');
    expect(el.querySelector('#time-zone-example')?.textContent).toMatch(/ UTC$/);
    expect(formatTime(0)).toBe('1970-01-01 00:00:00.000 UTC');
    render(null, el);
  });
});
