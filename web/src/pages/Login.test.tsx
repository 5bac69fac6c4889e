import { render } from 'preact';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, credentials, setCredentials } from '../api/client';
import type { Me } from '../api/auth';
import { afterLogin, CodeField, loginMessage } from './Login';

const me = { user: { username: 'alice', display_name: 'Alice', type: 'admin', source: 'local', groups: [], totp: { enabled: true, required: true, recovery_codes_left: 10 } } } as unknown as Me;

afterEach(() => setCredentials(null));

describe('login flow', () => {
  it('asks for a code, signs in, or sends to enrolment', () => {
    expect(afterLogin({ status: 'totp_required', expires_in: 300 }, '/search')).toEqual({ step: 'totp' });
    expect(credentials()).toBeNull();
    expect(afterLogin({ status: 'authenticated', csrf_token: 'c1', me }, '/search')).toEqual({ go: '/search' });
    expect(credentials()).toEqual({ kind: 'session', csrf: 'c1', name: 'Alice' });
    expect(afterLogin({ status: 'totp_enrollment_required', csrf_token: 'c2', me }, '/live')).toEqual({ go: '/enrol?next=%2Flive' });
  });

  it('explains errors without telling which part was wrong', () => {
    expect(loginMessage(new ApiError('invalid_credentials', 'invalid username or password', 401))).toBe('Wrong user name or password.');
    expect(loginMessage(new ApiError('locked', 'x', 429, undefined, { retryAfter: 840 }))).toBe('Too many failed attempts: try again in 14 min.');
    expect(loginMessage(new ApiError('invalid_code', 'x', 401))).toBe('That code is wrong, expired or already used.');
  });

  it('switching to a recovery code drops the TOTP pattern (a recovery code is valid)', () => {
    const el = document.createElement('div');
    render(<CodeField recovery={false} value="" onInput={() => {}} />, el);
    expect(el.querySelector('input')?.getAttribute('pattern')).toBe('[0-9 ]{6,7}');
    render(<CodeField recovery value="uxol-ev26-roeq-rvzx" onInput={() => {}} />, el);
    const input = el.querySelector('input') as HTMLInputElement;
    expect(input.hasAttribute('pattern')).toBe(false);
    expect(el.querySelector('label')?.textContent).toBe('Recovery code');
    render(null, el);
  });
});
