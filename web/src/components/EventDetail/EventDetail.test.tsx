import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import { EventDetail } from './EventDetail';

describe('EventDetail', () => {
  it('lists every field and wires filter, exclude and column actions', () => {
    const el = document.createElement('div');
    const onFilter = vi.fn();
    const onToggle = vi.fn();
    const ev = { '@timestamp': '2024-01-01T00:00:00Z', '@group': 'acme', http: { status: 500 }, tags: ['a', 'b'] };
    act(() => render(<EventDetail event={ev} columns={['@group']} onFilter={onFilter} onToggleColumn={onToggle} />, el));
    expect([...el.querySelectorAll('th')].map((t) => t.textContent)).toEqual(['@timestamp', '@group', 'http.status', 'tags']);
    act(() => (el.querySelector('[data-field="http.status"] .value-link') as HTMLButtonElement).click());
    expect(onFilter).toHaveBeenLastCalledWith('http.status', '500', false);
    act(() => (el.querySelector('[aria-label="Exclude @group = acme"]') as HTMLButtonElement).click());
    expect(onFilter).toHaveBeenLastCalledWith('@group', 'acme', true);
    // An array of scalars: each element filters or excludes (issue 22), besides the column toggle.
    expect(el.querySelectorAll('[data-field="tags"] button')).toHaveLength(5);
    act(() => (el.querySelectorAll('[data-field="tags"] .value-link')[1] as HTMLButtonElement).click());
    expect(onFilter).toHaveBeenLastCalledWith('tags', 'b', false);
    act(() => (el.querySelector('[aria-label="Exclude tags = a"]') as HTMLButtonElement).click());
    expect(onFilter).toHaveBeenLastCalledWith('tags', 'a', true);
    expect(el.querySelector('[aria-label="Remove column @group"]')?.getAttribute('aria-pressed')).toBe('true');
    act(() => (el.querySelector('[aria-label="Add column tags"]') as HTMLButtonElement).click());
    expect(onToggle).toHaveBeenCalledWith('tags');
  });
});
