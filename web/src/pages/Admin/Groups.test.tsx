import { afterEach, describe, expect, it, vi } from 'vitest';
import { click, flush, mount, stubFetch, submit, typeInto, unmountAll } from '../../testing';
import { ops } from './fixtures';
import { Groups } from './Groups';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

describe('Groups tab', () => {
  it('lists groups with members; removing a member calls the API and reloads', async () => {
    const calls = stubFetch((c) => (c.method === 'GET' ? [200, { groups: [ops] }] : [204, null]));
    const root = mount(<Groups />);
    await flush();
    expect(root.querySelector('tbody th')?.textContent).toBe('ops');
    click(root.querySelector('[aria-label="Remove bob from ops"]'));
    await flush();
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(['GET /api/v1/groups', 'DELETE /api/v1/groups/ops/members/bob', 'GET /api/v1/groups']);
  });

  it('adds a group and empties the form; an error keeps what was typed', async () => {
    let refuse = true;
    const calls = stubFetch((c) => {
      if (c.method === 'GET') return [200, { groups: [] }];
      return refuse ? [409, { error: { type: 'conflict', message: 'group ops exists' } }] : [201, ops];
    });
    const root = mount(<Groups />);
    await flush();
    const form = root.querySelector('form[aria-label="New group"]');
    const name = form?.querySelector('[aria-label="Group name"]') as HTMLInputElement;
    typeInto(name, 'ops');
    typeInto(form?.querySelector('[aria-label="Description"]') ?? null, 'operations');
    submit(form);
    await flush();
    expect(root.textContent).toContain('group ops exists');
    expect(name.value).toBe('ops');
    refuse = false;
    submit(form);
    await flush();
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.body)).toEqual([
      { name: 'ops', description: 'operations' },
      { name: 'ops', description: 'operations' },
    ]);
    expect(name.value).toBe('');
  });
});
