import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mount, unmountAll } from '../../testing';
import { QueryHints } from './QueryHints';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

describe('QueryHints', () => {
  it('lists the hints against the fields in the range', async () => {
    const urls: string[] = [];
    vi.stubGlobal(
      'fetch',
      vi.fn((url: string) => {
        urls.push(url);
        return Promise.resolve(new Response(JSON.stringify({ fields: [{ name: 'status', types: ['long'] }] }), { status: 200 }));
      }),
    );
    const root = mount(<QueryHints query="stauts:500 and x" range={{ from: 'now-1h', to: 'now' }} />);
    await act(async () => new Promise((r) => setTimeout(r, 0)));
    expect(urls).toEqual(['/api/v1/fields?from=now-1h&to=now']);
    expect([...root.querySelectorAll('li')].map((l) => l.textContent)).toEqual([
      'No event in this time range has the field “stauts” — did you mean “status”?',
      '“and” is searched as a word: operators are upper-case (AND).',
      'Words without a field (“x”) are searched in message only; to search another field, write field:word.',
    ]);
  });
});

describe('QueryHints: search all fields', () => {
  it('offers the query over every string field, and runs it', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(() =>
        Promise.resolve(
          new Response(JSON.stringify({ fields: [{ name: 'message', types: ['text'] }, { name: 'service', types: ['keyword'] }, { name: 'ms', types: ['number'] }] }), { status: 200 }),
        ),
      ),
    );
    const ran: string[] = [];
    const root = mount(<QueryHints query="vault" range={{ from: 'now-1h', to: 'now' }} onQuery={(q) => ran.push(q)} />);
    await act(async () => new Promise((r) => setTimeout(r, 0)));
    const button = [...root.querySelectorAll('button')].find((b) => b.textContent === 'Search all fields');
    expect(button?.getAttribute('title')).toBe('(message:vault OR service:vault)');
    act(() => button?.click());
    expect(ran).toEqual(['(message:vault OR service:vault)']);
  });
});
