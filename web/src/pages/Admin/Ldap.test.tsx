import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LdapSettings } from '../../api/admin';
import { flush, mount, stubFetch, submit, typeInto, unmountAll } from '../../testing';
import { formOf, Ldap, settingsOf } from './Ldap';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

const stored: LdapSettings = {
  url: 'ldap://127.0.0.1:3389',
  tls: 'none',
  ca_file: null,
  bind_dn: null,
  search_base: 'ou=people,dc=example,dc=com',
  search_filter: '(uid={username})',
  search_bind_dn: 'cn=reader,dc=example,dc=com',
  search_bind_password_set: true,
  group_search_base: 'ou=groups,dc=example,dc=com',
  group_search_filter: '(member={dn})',
  group_name_attribute: 'cn',
  default_type: 'viewer',
  group_map: [{ ldap: 'admins', groups: [], type: 'admin' }, { ldap: 'ops', groups: ['ops', 'web'], type: null }],
  timeout: '5s',
};
const policy = {
  session: { idle_timeout: '30m', absolute_timeout: '12h' },
  lockout: { threshold: 5, window: '15m', duration: '15m' },
  password_min_length: 12,
  totp: { require_types: ['admin'] },
};

describe('LDAP form model', () => {
  it('reads stored settings into the form and back, keeping the stored bind password', () => {
    const { search_bind_password_set: _set, ...rest } = stored;
    expect(settingsOf(formOf(stored))).toEqual(rest);
    expect(formOf(stored).group_map[1]).toEqual({ ldap: 'ops', groups: 'ops, web', type: '' });
    expect(settingsOf({ ...formOf(stored), search_bind_password: 's3cret' }).search_bind_password).toBe('s3cret');
  });

  it('names what to fix instead of saving something the server refuses', () => {
    const empty = formOf(null);
    expect(Object.keys(settingsOf({ ...empty, url: 'ldaps://x', bind_dn: 'uid={username}', group_attribute: '' }))).not.toContain('group_attribute');
    expect(() => settingsOf(empty)).toThrow('Fill in the LDAP URL (for example ldaps://ldap.example.com).');
    expect(() => settingsOf({ ...empty, url: 'ldap.example.com' })).toThrow('must start with ldap:// or ldaps://');
    expect(() => settingsOf({ ...empty, url: 'ldaps://x' })).toThrow('either the bind DN template');
    expect(() => settingsOf({ ...empty, url: 'ldaps://x', bind_dn: 'uid={username}', search_base: 'dc=x' })).toThrow('only one of');
    const map = { ...empty, url: 'ldaps://x', bind_dn: 'uid={username}' };
    expect(() => settingsOf({ ...map, group_map: [{ ldap: '', groups: 'ops', type: '' }] })).toThrow('Group mapping 1: fill in the LDAP group.');
    expect(() => settingsOf({ ...map, group_map: [{ ldap: 'x', groups: ' ', type: '' }] })).toThrow('give sluice groups or a user type');
    expect(settingsOf({ ...map, group_map: [{ ldap: '', groups: '', type: '' }] }).group_map).toEqual([]);
  });
});

describe('LDAP tab', () => {
  it('shows config-file settings read-only', async () => {
    stubFetch((c) => [200, c.path.endsWith('/ldap') ? { source: 'config', settings: stored } : policy]);
    const root = mount(<Ldap />);
    await flush();
    expect((root.querySelector('fieldset') as HTMLFieldSetElement).disabled).toBe(true);
    expect((root.querySelector('[aria-label="LDAP URL"]') as HTMLInputElement).value).toBe('ldap://127.0.0.1:3389');
    expect(root.textContent).toContain('read-only here');
  });

  it('saves the form as settings; an empty URL is a clear error, not a JSON parser message', async () => {
    const calls = stubFetch((c) => {
      if (c.path.endsWith('/settings/auth')) return [200, policy];
      return [200, { source: c.method === 'PUT' ? 'database' : 'none', settings: c.method === 'PUT' ? (c.body as { settings: LdapSettings }).settings : null }];
    });
    const root = mount(<Ldap />);
    await flush();
    const form = root.querySelector('form[aria-label="LDAP settings"]');
    expect((root.querySelector('[aria-label="LDAP URL"]') as HTMLInputElement).placeholder).toBe('ldaps://ldap.example.com');
    submit(form);
    await flush();
    expect(root.textContent).toContain('Fill in the LDAP URL');
    expect(calls.some((c) => c.method === 'PUT')).toBe(false);
    typeInto(root.querySelector('[aria-label="LDAP URL"]'), 'ldaps://ldap.acme.test');
    typeInto(root.querySelector('[aria-label="Bind DN template"]'), 'uid={username},ou=people,dc=acme');
    typeInto(root.querySelector('[aria-label="Default user type"]'), 'operator');
    submit(form);
    await flush();
    const put = calls.find((c) => c.method === 'PUT');
    expect(put?.path).toBe('/api/v1/settings/ldap');
    expect((put?.body as { settings: LdapSettings }).settings).toMatchObject({ url: 'ldaps://ldap.acme.test', tls: 'ldaps', bind_dn: 'uid={username},ou=people,dc=acme', default_type: 'operator', group_attribute: 'memberOf', group_map: [] });
    expect(root.querySelector('[role=status]')?.textContent).toBe('LDAP settings saved.');
    expect(root.textContent).not.toContain('Fill in the LDAP URL');
  });
});
