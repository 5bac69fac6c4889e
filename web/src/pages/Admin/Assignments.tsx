// The Assignments tab: which sources (group / subgroup / host patterns) a
// user or a group may read; add and remove.
import { useState } from 'preact/hooks';
import {
  createAssignment,
  deleteAssignment,
  listAssignments,
} from '../../api/admin';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { useRequest } from '../../hooks/useRequest';
import { patternText } from '../Account';
import { useAction } from './useAction';
import { DataTable } from '../../components/DataTable/DataTable';
import { InlineForm } from '../../components/InlineForm/InlineForm';

export function Assignments() {
  const list = useRequest('assignments', listAssignments);
  const { error, run } = useAction(list.reload);
  const [a, setA] = useState({ kind: 'group' as 'user' | 'group', name: '', group: '', subgroup: '*', host: '*' });
  return (
    <section aria-label="Assignments">
      <p class="muted">A user sees the events whose group / subgroup / host match one of their own or their groups' patterns (<code>*</code> and <code>?</code> are wildcards).</p>
      <ErrorBox error={list.error ?? error} />
      <DataTable class="admin-table" columns={['for', 'sources', 'by', '']}>
        {(list.data ?? []).map((x) => (
          <tr key={x.id}>
            <td>
              {x.subject.kind} <strong>{x.subject.name}</strong>
            </td>
            <td>
              <code>{patternText(x.pattern)}</code>
            </td>
            <td>
              {x.created_by} <span class="muted">{x.created_at}</span>
            </td>
            <td>
              <button type="button" class="link danger" onClick={() => run(() => deleteAssignment(x.id))}>
                remove
              </button>
            </td>
          </tr>
        ))}
      </DataTable>
      <InlineForm
        label="New assignment"
        onSubmit={() => {
          run(
            () => createAssignment({ kind: a.kind, name: a.name }, { group: a.group, subgroup: a.subgroup || '*', host: a.host || '*' }),
            () => setA({ ...a, name: '', group: '', subgroup: '*', host: '*' }),
          );
        }}
      >
        <select aria-label="Subject kind" value={a.kind} onChange={(e) => setA({ ...a, kind: e.currentTarget.value as 'user' | 'group' })}>
          <option value="group">group</option>
          <option value="user">user</option>
        </select>
        <input aria-label="Subject name" placeholder="name" value={a.name} onInput={(e) => setA({ ...a, name: e.currentTarget.value })} required />
        <input aria-label="Source group" placeholder="@group" value={a.group} onInput={(e) => setA({ ...a, group: e.currentTarget.value })} required />
        <input aria-label="Source subgroup" placeholder="@subgroup" value={a.subgroup} onInput={(e) => setA({ ...a, subgroup: e.currentTarget.value })} />
        <input aria-label="Source host" placeholder="@host" value={a.host} onInput={(e) => setA({ ...a, host: e.currentTarget.value })} />
        <button type="submit" class="primary">
          Assign
        </button>
      </InlineForm>
    </section>
  );
}
