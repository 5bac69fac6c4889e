import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mount, unmountAll } from '../../testing';
import { contextUrl } from '../../api/search';
import type { Hit } from '../../api/types';
import { SurroundingEvents, origin } from './SurroundingEvents';

const hit = (id: string, message: string): Hit => ({
  id,
  event: { '@timestamp': '2026-11-26T10:00:05.000000001Z', '@host': 'web 1', '@source': 'syslog', message },
});

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

describe('SurroundingEvents', () => {
  it("asks for the hit's id, time, host and source", () => {
    expect(contextUrl(hit('e6', 'x'), 5)).toBe('/api/v1/context?id=e6&at=2026-11-26T10%3A00%3A05.000000001Z&host=web+1&source=syslog&n=5');
    const noHost: Hit = { id: 'e1', event: { '@timestamp': '2026-11-26T10:00:05Z', '@source': 'http:10.0.0.5:40112' } };
    expect(contextUrl(noHost, 5)).toBe('/api/v1/context?id=e1&at=2026-11-26T10%3A00%3A05Z&source=http%3A10.0.0.5%3A40112&n=5');
    expect(origin(noHost)).toBe('source http:10.0.0.5:40112');
  });

  it('shows the events before and after in order, the event itself marked', async () => {
    const urls: string[] = [];
    vi.stubGlobal(
      'fetch',
      vi.fn((url: string) => {
        urls.push(url);
        const body = { before: [hit('e4', 'four'), hit('e5', 'five')], event: hit('e6', 'six'), after: [hit('e7', 'seven')] };
        return Promise.resolve(new Response(JSON.stringify(body), { status: 200 }));
      }),
    );
    const root = mount(<SurroundingEvents hit={hit('e6', 'six')} />);
    expect(urls).toEqual([]);
    act(() => (root.querySelector('button.show-context') as HTMLButtonElement).click());
    await act(async () => new Promise((r) => setTimeout(r, 0)));
    expect(urls).toEqual([contextUrl(hit('e6', 'six'), 5)]);
    expect([...root.querySelectorAll('tr')].map((r) => r.getAttribute('data-id'))).toEqual(['e4', 'e5', 'e6', 'e7']);
    expect(root.querySelector('tr[aria-current="true"]')?.getAttribute('data-id')).toBe('e6');
  });
});
