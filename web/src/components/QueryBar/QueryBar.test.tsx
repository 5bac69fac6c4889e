import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../api/client';
import { RECENT_QUERIES, recent, remember } from '../../lib/recent';
import { flush, stubFetch } from '../../testing';
import { QueryBar } from './QueryBar';

let el: HTMLElement;
afterEach(() => {
  render(null, el);
  el.remove();
});

function mount(node: preact.ComponentChild): HTMLElement {
  el = document.createElement('div');
  document.body.appendChild(el);
  act(() => render(node, el));
  return el;
}

describe('QueryBar', () => {
  it('submits the typed query on Enter (form submit)', () => {
    const onSubmit = vi.fn();
    mount(<QueryBar value="a" onSubmit={onSubmit} />);
    const input = el.querySelector('input') as HTMLInputElement;
    act(() => {
      input.value = 'status:500';
      input.dispatchEvent(new Event('input', { bubbles: true }));
    });
    act(() => {
      (el.querySelector('form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    expect(onSubmit).toHaveBeenCalledWith('status:500');
  });

  it('draws a parse error under the query at its position', () => {
    const err = new ApiError('query_parse_error', 'unterminated phrase at position 7', 400, 7);
    mount(<QueryBar value={'é AND "abc'} onSubmit={() => {}} error={err} />);
    const box = el.querySelector('#query-error') as HTMLElement;
    // byte 7 is character 6: 'é' takes two bytes.
    expect(box.dataset['position']).toBe('6');
    expect(box.querySelector('pre')?.textContent).toBe('é AND "abc\n      ^');
    expect(box.textContent).toContain('unterminated phrase');
    expect(el.querySelector('input')?.getAttribute('aria-invalid')).toBe('true');
  });

  it('ignores other errors and focuses on "/"', () => {
    mount(<QueryBar value="" onSubmit={() => {}} error={new ApiError('time_error', 'bad', 400)} />);
    expect(el.querySelector('#query-error')).toBeNull();
    act(() => {
      document.body.dispatchEvent(new KeyboardEvent('keydown', { key: '/', bubbles: true }));
    });
    expect(document.activeElement).toBe(el.querySelector('input'));
  });
});

describe('QueryBar suggestions (issue 22, missing 4)', () => {
  const range = { from: 'now-1h', to: 'now' };
  const answer = (c: { path: string }): [number, unknown] =>
    c.path.startsWith('/api/v1/fields')
      ? [200, { fields: [{ name: 'level', types: ['keyword'] }, { name: 'alert_level', types: ['keyword'] }, { name: 'message', types: ['text'] }] }]
      : [200, { total: 9, took_ms: 1, aggs: { top: { type: 'terms', buckets: [{ key: 'error', count: 6 }, { key: 'info', count: 3 }], other: 0 } } }];
  const typeAt = (input: HTMLInputElement, v: string): void => {
    act(() => {
      input.value = v;
      input.setSelectionRange(v.length, v.length);
      input.dispatchEvent(new Event('input', { bubbles: true }));
    });
  };
  const key = (input: HTMLInputElement, k: string): void => {
    act(() => {
      input.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
    });
  };
  const options = (): string[] => [...el.querySelectorAll('[role=option] .v')].map((o) => o.textContent ?? '');
  afterEach(() => {
    vi.unstubAllGlobals();
    localStorage.removeItem(RECENT_QUERIES);
  });

  it('suggests field names, then the top values of the field, and takes them with the keyboard', async () => {
    const calls = stubFetch(answer);
    const onSubmit = vi.fn();
    mount(<QueryBar value="" onSubmit={onSubmit} range={range} />);
    const input = el.querySelector('input') as HTMLInputElement;
    typeAt(input, 'error AND lev');
    await flush();
    expect(options()).toEqual(['level', 'alert_level']);
    expect(calls[0]?.path).toBe('/api/v1/fields?from=now-1h&to=now');
    key(input, 'ArrowDown');
    key(input, 'Enter');
    expect(input.value).toBe('error AND level:');
    expect(onSubmit).not.toHaveBeenCalled();
    await flush();
    expect(options()).toEqual(['error', 'info']);
    expect(calls[1]?.body).toEqual({ query: '', from: 'now-1h', to: 'now', aggs: { top: { type: 'terms', field: 'level', size: 10 } } });
    key(input, 'ArrowDown');
    key(input, 'ArrowDown');
    key(input, 'Tab');
    expect(input.value).toBe('error AND level:info ');
    // Enter with nothing chosen runs the query and remembers it.
    act(() => {
      (el.querySelector('form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    expect(onSubmit).toHaveBeenCalledWith('error AND level:info');
    expect(recent(RECENT_QUERIES)).toEqual(['error AND level:info']);
  });

  it('offers the recent queries in an empty bar; one runs on a click', async () => {
    stubFetch(answer);
    remember(RECENT_QUERIES, 'older');
    remember(RECENT_QUERIES, 'level:error');
    const onSubmit = vi.fn();
    mount(<QueryBar value="" onSubmit={onSubmit} range={range} />);
    const input = el.querySelector('input') as HTMLInputElement;
    act(() => {
      input.dispatchEvent(new FocusEvent('focus'));
    });
    expect(options()).toEqual(['level:error', 'older']);
    expect(el.querySelector('[role=listbox]')?.getAttribute('aria-label')).toBe('Recent queries');
    act(() => {
      (el.querySelectorAll('[role=option]')[1] as HTMLElement).dispatchEvent(new MouseEvent('mousedown', { bubbles: true, cancelable: true }));
    });
    expect(onSubmit).toHaveBeenCalledWith('older');
    expect(el.querySelector('[role=listbox]')).toBeNull();
  });

  it('opens the syntax help; without a range nothing is suggested', () => {
    mount(<QueryBar value="" onSubmit={() => {}} range={range} />);
    act(() => (el.querySelector('[aria-label="Query syntax help"]') as HTMLButtonElement).click());
    expect(el.querySelector('[role=dialog][aria-label="Query syntax"]')?.textContent).toContain('_exists_:trace_id');
    render(null, el);
    el.remove();
    remember(RECENT_QUERIES, 'x');
    mount(<QueryBar value="" onSubmit={() => {}} />);
    act(() => {
      (el.querySelector('input') as HTMLInputElement).dispatchEvent(new FocusEvent('focus'));
    });
    expect(el.querySelector('[role=listbox]')).toBeNull();
    expect(el.querySelector('[aria-label="Query syntax help"]')).toBeNull();
  });
});
