import { afterEach, describe, expect, it } from 'vitest';
import { click, mount, unmountAll } from '../../testing';
import { act } from 'preact/test-utils';
import { QuerySyntaxHelp, SYNTAX } from './QuerySyntaxHelp';

afterEach(unmountAll);

describe('QuerySyntaxHelp', () => {
  it('opens the examples and closes on Escape', () => {
    const el = mount(<QuerySyntaxHelp />);
    click(el.querySelector('button'));
    expect(el.querySelectorAll('[role=dialog] tr').length).toBe(SYNTAX.length);
    expect(el.querySelector('[role=dialog]')?.textContent).toContain('status:[400 TO 499]');
    act(() => {
      document.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }));
    });
    expect(el.querySelector('[role=dialog]')).toBeNull();
  });
});
