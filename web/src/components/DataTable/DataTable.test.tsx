import { render } from 'preact';
import { describe, expect, it } from 'vitest';
import { DataTable } from './DataTable';

describe('DataTable', () => {
  it('renders one column heading per column over the given rows', () => {
    const el = document.createElement('div');
    render(
      <DataTable class="admin-table" columns={['user', 'type', '']}>
        <tr>
          <td>alice</td>
          <td>admin</td>
          <td />
        </tr>
      </DataTable>,
      el,
    );
    const heads = [...el.querySelectorAll('table.admin-table thead th[scope=col]')].map((th) => th.textContent);
    expect(heads).toEqual(['user', 'type', '']);
    expect([...el.querySelectorAll('tbody td')].map((td) => td.textContent)).toEqual(['alice', 'admin', '']);
  });
});
