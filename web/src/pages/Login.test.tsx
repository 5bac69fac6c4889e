import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, credentials, setCredentials } from '../api/client';
import type { Me } from '../api/auth';
import { afterLogin, loginMessage } from './Login';

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
});
