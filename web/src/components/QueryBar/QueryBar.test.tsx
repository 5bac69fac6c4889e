import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../api/client';
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
