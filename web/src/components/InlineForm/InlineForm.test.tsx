import { render } from 'preact';
import { describe, expect, it, vi } from 'vitest';
import { InlineForm } from './InlineForm';

describe('InlineForm', () => {
  it('runs onSubmit on submit and prevents the navigation', () => {
    const el = document.createElement('div');
    const onSubmit = vi.fn();
    render(
      <InlineForm label="New group" onSubmit={onSubmit}>
        <button type="submit">Add</button>
      </InlineForm>,
      el,
    );
    const form = el.querySelector('form.inline-form[aria-label="New group"]') as HTMLFormElement;
    const ev = new Event('submit', { cancelable: true });
    form.dispatchEvent(ev);
    expect(onSubmit).toHaveBeenCalledTimes(1);
    expect(ev.defaultPrevented).toBe(true);
  });
});
