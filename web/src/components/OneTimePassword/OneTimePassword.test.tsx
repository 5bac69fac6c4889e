import { render } from 'preact';
import { describe, expect, it } from 'vitest';
import { OneTimePassword } from './OneTimePassword';

describe('OneTimePassword', () => {
  it('asks to replace a one-time password, links to the account page, and is gone once replaced', () => {
    const el = document.createElement('div');
    render(<OneTimePassword oneTime={true} here="/search" />, el);
    expect(el.querySelector('[role=alert]')?.textContent).toBe(
      'You signed in with the one-time password printed when sluice first started. Replace it now',
    );
    expect(el.querySelector('a')?.getAttribute('href')).toBe('/account');
    render(<OneTimePassword oneTime={true} here="/account" />, el);
    expect(el.querySelector('a')).toBeNull();
    expect(el.textContent).toContain('Replace it with the form below.');
    render(<OneTimePassword oneTime={false} here="/search" />, el);
    expect(el.innerHTML).toBe('');
  });
});
