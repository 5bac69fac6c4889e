import { afterEach, describe, expect, it, vi } from 'vitest';
import { flush, mount, stubFetch, submit, typeInto, unmountAll } from '../../testing';
import { Assignments } from './Assignments';
import { opsReadsAcme } from './fixtures';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

describe('Assignments tab', () => {
  it('shows each assignment as group/subgroup/host and assigns a new pattern (empty parts are *)', async () => {
    const calls = stubFetch((c) => [c.method === 'POST' ? 201 : 200, c.method === 'GET' ? { assignments: [opsReadsAcme] } : opsReadsAcme]);
    const root = mount(<Assignments />);
    await flush();
    expect(root.querySelector('tbody code')?.textContent).toBe('acme/*/web-*');
    const form = root.querySelector('form[aria-label="New assignment"]');
    typeInto(form?.querySelector('[aria-label="Subject kind"]') ?? null, 'user');
    typeInto(form?.querySelector('[aria-label="Subject name"]') ?? null, 'bob');
    typeInto(form?.querySelector('[aria-label="Source group"]') ?? null, 'shop');
    typeInto(form?.querySelector('[aria-label="Source subgroup"]') ?? null, '');
    submit(form);
    await flush();
    expect(calls[1]).toEqual({
      method: 'POST',
      path: '/api/v1/assignments',
      body: { subject: { kind: 'user', name: 'bob' }, pattern: { group: 'shop', subgroup: '*', host: '*' } },
    });
    expect(calls[2]?.method).toBe('GET');
  });
});
