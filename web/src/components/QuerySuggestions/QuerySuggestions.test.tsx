import { afterEach, describe, expect, it, vi } from 'vitest';
import { mount, unmountAll } from '../../testing';
import { QuerySuggestions } from './QuerySuggestions';

afterEach(unmountAll);

describe('QuerySuggestions', () => {
  it('lists top values with counts, marks the active one, and picks on a press', () => {
    const onPick = vi.fn();
    const items = [{ kind: 'value' as const, value: 'error', count: 1200 }, { kind: 'value' as const, value: 'info', count: 3 }];
    const el = mount(<QuerySuggestions id="s" items={items} active={1} onPick={onPick} />);
    expect(el.querySelector('[role=listbox]')?.getAttribute('aria-label')).toBe('Top values');
    const opts = [...el.querySelectorAll('[role=option]')];
    expect(opts.map((o) => o.textContent)).toEqual(['error1200', 'info3']);
    expect(opts.map((o) => o.getAttribute('aria-selected'))).toEqual(['false', 'true']);
    opts[0]?.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, cancelable: true }));
    expect(onPick).toHaveBeenCalledWith(items[0]);
  });
});
