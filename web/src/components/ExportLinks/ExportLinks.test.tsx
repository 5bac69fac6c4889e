import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { exportUrl } from '../../api/search';
import { ExportLinks } from './ExportLinks';

let el: HTMLElement | null = null;
afterEach(() => {
  if (el) render(null, el);
  el?.remove();
  el = null;
});

describe('ExportLinks', () => {
  it('builds the export URL: CSV with the time and the chosen columns, ndjson whole events', () => {
    const s = { query: 'level:error', from: 'now-1h', to: 'now', columns: ['service', '@host'] };
    expect(exportUrl({ ...s, format: 'csv' })).toBe('/api/v1/export?query=level%3Aerror&from=now-1h&to=now&format=csv&fields=%40timestamp%2Cservice%2C%40host');
    expect(exportUrl({ ...s, format: 'ndjson' })).toBe('/api/v1/export?query=level%3Aerror&from=now-1h&to=now&format=ndjson');
    expect(exportUrl({ ...s, columns: [], format: 'csv' })).toBe('/api/v1/export?query=level%3Aerror&from=now-1h&to=now&format=csv');
  });

  it('links both formats and says when the export stops at the limit', () => {
    const root = document.createElement('div');
    el = root;
    document.body.appendChild(root);
    const search = { query: '', from: 'now-15m', to: 'now', columns: [] };
    act(() => render(<ExportLinks search={search} total={12_000} />, root));
    expect(root.querySelector('a.export-csv')?.getAttribute('href')).toBe('/api/v1/export?query=&from=now-15m&to=now&format=csv');
    expect(root.querySelector('a.export-ndjson')?.getAttribute('download')).toBe('sluice-export.ndjson');
    expect(root.textContent).toContain('(the newest 10,000)');
    act(() => render(<ExportLinks search={search} total={12} />, root));
    expect(root.textContent).not.toContain('newest');
  });
});
