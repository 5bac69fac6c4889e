import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AuditRecord } from '../../api/admin';
import { click, flush, mount, stubFetch, submit, typeInto, unmountAll } from '../../testing';
import { Audit } from './Audit';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

const rec: AuditRecord = {
  id: 9,
  time: '2026-11-26T10:00:00Z',
  actor: 'admin',
  actor_kind: 'user',
  action: 'user.create',
  target: 'bob',
  detail: { type: 'viewer' },
  outcome: 'success',
  ip: '127.0.0.1',
  user_agent: null,
};

describe('Audit tab', () => {
  it('lists records, filters by actor and action, pages to older ones', async () => {
    const calls = stubFetch(() => [200, { records: [rec], next: '9' }]);
    const root = mount(<Audit />);
    await flush();
    expect(root.querySelector('tbody tr')?.textContent).toContain('user.create');
    expect(root.querySelector('tbody code')?.textContent).toBe('{"type":"viewer"}');
    const form = root.querySelector('form');
    typeInto(form?.querySelector('[aria-label="Actor"]') ?? null, 'admin');
    typeInto(form?.querySelector('[aria-label="Action prefix"]') ?? null, 'user.');
    submit(form);
    await flush();
    const second = new URL(calls[1]?.path ?? '', 'http://x').searchParams;
    expect([second.get('actor'), second.get('action')]).toEqual(['admin', 'user.']);
    click([...root.querySelectorAll('button')].find((b) => b.textContent === 'Older') ?? null);
    await flush();
    expect(new URL(calls[2]?.path ?? '', 'http://x').searchParams.get('before')).toBe('9');
  });
});
