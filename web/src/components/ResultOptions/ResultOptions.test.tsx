import { afterEach, describe, expect, it, vi } from 'vitest';
import { mount, typeInto, unmountAll } from '../../testing';
import { ResultOptions } from './ResultOptions';

afterEach(unmountAll);

describe('ResultOptions', () => {
  it('chooses the order and the auto-refresh period', () => {
    const onOrder = vi.fn();
    const onRefresh = vi.fn();
    const el = mount(<ResultOptions order="newest" refresh={null} onOrder={onOrder} onRefresh={onRefresh} />);
    expect([...el.querySelectorAll('[aria-label="Auto-refresh"] option')].map((o) => o.textContent)).toEqual(['off', 'every 5s', 'every 30s', 'every 1m']);
    typeInto(el.querySelector('[aria-label="Sort"]'), 'oldest');
    expect(onOrder).toHaveBeenCalledWith('oldest');
    typeInto(el.querySelector('[aria-label="Auto-refresh"]'), '30s');
    expect(onRefresh).toHaveBeenCalledWith('30s');
    typeInto(el.querySelector('[aria-label="Auto-refresh"]'), '');
    expect(onRefresh).toHaveBeenLastCalledWith(null);
  });
});
