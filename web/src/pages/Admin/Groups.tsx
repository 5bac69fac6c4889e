// The Groups tab: groups with description, the two-factor requirement,
// local and LDAP members; add and remove members, add and delete groups.
import { useState } from 'preact/hooks';
import {
  addMember,
  createGroup,
  deleteGroup,
  listGroups,
  removeMember,
  updateGroup,
} from '../../api/admin';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { useRequest } from '../../hooks/useRequest';
import { useAction } from './useAction';
import { DataTable } from '../../components/DataTable/DataTable';
import { InlineForm } from '../../components/InlineForm/InlineForm';

export function Groups() {
  const groups = useRequest('groups', listGroups);
  const { error, run } = useAction(groups.reload);
  const [name, setName] = useState('');
  const [desc, setDesc] = useState('');
  return (
    <section aria-label="Groups">
      <ErrorBox error={groups.error ?? error} />
      <DataTable class="admin-table" columns={['group', 'description', 'requires 2FA', 'members', 'from LDAP', 'actions']}>
        {(groups.data ?? []).map((g) => (
          <tr key={g.name}>
            <th scope="row">{g.name}</th>
            <td>{g.description}</td>
            <td>
              <input type="checkbox" aria-label={`${g.name} requires 2FA`} checked={g.require_totp} onChange={(e) => run(() => updateGroup(g.name, { require_totp: e.currentTarget.checked }))} />
            </td>
            <td>
              {g.members.map((m) => (
                <span key={m} class="chip">
                  {m}{' '}
                  <button type="button" class="link" aria-label={`Remove ${m} from ${g.name}`} onClick={() => run(() => removeMember(g.name, m))}>
                    ×
                  </button>
                </span>
              ))}
              <button
                type="button"
                class="link"
                onClick={() => {
                  const u = prompt(`Add which user to ${g.name}?`);
                  if (u) run(() => addMember(g.name, u.trim()));
                }}
              >
                + member
              </button>
            </td>
            <td>{g.ldap_members.join(', ')}</td>
            <td>
              <button type="button" class="link danger" onClick={() => confirm(`Delete group ${g.name} and its assignments?`) && run(() => deleteGroup(g.name))}>
                delete
              </button>
            </td>
          </tr>
        ))}
      </DataTable>
      <InlineForm
        label="New group"
        onSubmit={() => {
          run(
            () => createGroup({ name, description: desc }),
            () => {
              setName('');
              setDesc('');
            },
          );
        }}
      >
        <input aria-label="Group name" placeholder="group name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        <input aria-label="Description" placeholder="description" value={desc} onInput={(e) => setDesc(e.currentTarget.value)} />
        <button type="submit" class="primary">
          Add group
        </button>
      </InlineForm>
    </section>
  );
}
