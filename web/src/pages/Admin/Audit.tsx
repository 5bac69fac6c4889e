// The Audit tab: the audit log of the last 7 days, filtered by actor,
// action prefix and text, paged to older records.
import { useState } from 'preact/hooks';
import { audit, type AuditQuery } from '../../api/admin';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { useRequest } from '../../hooks/useRequest';
import { DataTable } from '../../components/DataTable/DataTable';
import { InlineForm } from '../../components/InlineForm/InlineForm';

export function Audit() {
  const [q, setQ] = useState<AuditQuery>({ from: 'now-7d', size: 100 });
  const [form, setForm] = useState({ actor: '', action: '', q: '' });
  const page = useRequest(JSON.stringify(q), (s) => audit(q, s));
  return (
    <section aria-label="Audit log">
      <InlineForm
        onSubmit={() => {
          setQ({ from: 'now-7d', size: 100, actor: form.actor, action: form.action, q: form.q });
        }}
      >
        <input aria-label="Actor" placeholder="actor" value={form.actor} onInput={(e) => setForm({ ...form, actor: e.currentTarget.value })} />
        <input aria-label="Action prefix" placeholder="action (e.g. user.)" value={form.action} onInput={(e) => setForm({ ...form, action: e.currentTarget.value })} />
        <input aria-label="Text" placeholder="text" value={form.q} onInput={(e) => setForm({ ...form, q: e.currentTarget.value })} />
        <button type="submit">Filter</button>
      </InlineForm>
      <ErrorBox error={page.error} />
      <DataTable class="admin-table audit" columns={['time', 'actor', 'action', 'target', 'outcome', 'detail', 'from']}>
        {(page.data?.records ?? []).map((r) => (
          <tr key={r.id} class={r.outcome === 'success' ? '' : 'has-errors'}>
            <td class="nowrap">{r.time}</td>
            <td>
              {r.actor} <span class="muted">{r.actor_kind}</span>
            </td>
            <td>{r.action}</td>
            <td>{r.target ?? ''}</td>
            <td>{r.outcome}</td>
            <td>
              <code>{r.detail === null || r.detail === undefined ? '' : JSON.stringify(r.detail)}</code>
            </td>
            <td>{r.ip ?? ''}</td>
          </tr>
        ))}
      </DataTable>
      {page.data?.next ? (
        <button type="button" onClick={() => setQ({ ...q, before: Number(page.data?.next) })}>
          Older
        </button>
      ) : null}
    </section>
  );
}
