import { afterEach, describe, expect, it, vi } from 'vitest';
import { click, flush, mount, stubFetch, submit, typeInto, unmountAll } from '../../testing';
import { bob } from './fixtures';
import { Users } from './Users';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

describe('Users tab', () => {
  it('lists users, disables one and reloads the list', async () => {
    let disabled = false;
    const calls = stubFetch((c) => {
      if (c.method === 'PATCH') disabled = true;
      return [200, c.method === 'GET' ? { users: [{ ...bob, disabled }] } : { ...bob, disabled }];
    });
    const root = mount(<Users />);
    await flush();
    const row = root.querySelector('tr[data-user="bob"]');
    expect(row?.textContent).toContain('on (7 codes)');
    expect(row?.textContent).toContain('active');
    click([...(row?.querySelectorAll('button') ?? [])].find((b) => b.textContent === 'disable') ?? null);
    await flush();
    await flush();
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(['GET /api/v1/users', 'PATCH /api/v1/users/bob', 'GET /api/v1/users']);
    expect(calls[1]?.body).toEqual({ disabled: true });
    expect(root.querySelector('tr[data-user="bob"]')?.textContent).toContain('disabled');
  });

  it('adds a user with its groups and empties the form after the add', async () => {
    const calls = stubFetch((c) => [c.method === 'POST' ? 201 : 200, c.method === 'GET' ? { users: [] } : bob]);
    const root = mount(<Users />);
    await flush();
    const form = root.querySelector('form[aria-label="New user"]');
    typeInto(form?.querySelector('[aria-label="User name"]') ?? null, 'carol');
    typeInto(form?.querySelector('[aria-label="Type"]') ?? null, 'operator');
    typeInto(form?.querySelector('[aria-label="Password"]') ?? null, 'correct horse battery');
    typeInto(form?.querySelector('[aria-label="Groups"]') ?? null, 'ops, web ,');
    submit(form);
    await flush();
    expect(calls[1]).toEqual({
      method: 'POST',
      path: '/api/v1/users',
      body: { username: 'carol', display_name: '', type: 'operator', password: 'correct horse battery', groups: ['ops', 'web'] },
    });
    expect((form?.querySelector('[aria-label="User name"]') as HTMLInputElement).value).toBe('');
  });

  it('sets a password through a hidden input and says so', async () => {
    const calls = stubFetch((c) => [200, c.method === 'GET' ? { users: [bob] } : bob]);
    const root = mount(<Users />);
    await flush();
    click([...root.querySelectorAll('tr[data-user="bob"] button')].find((b) => b.textContent === 'set password') ?? null);
    const form = root.querySelector('form[aria-label="Set the password of bob"]');
    const input = form?.querySelector('input') as HTMLInputElement;
    expect(input.type).toBe('password');
    typeInto(input, 'n3w-secret');
    submit(form);
    await flush();
    expect(calls[1]).toEqual({ method: 'PATCH', path: '/api/v1/users/bob', body: { password: 'n3w-secret' } });
    expect(root.querySelector('[role=status]')?.textContent).toBe('Password of bob set.');
    expect(root.querySelector('form[aria-label="Set the password of bob"]')).toBeNull();
  });
});
