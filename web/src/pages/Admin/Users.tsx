// The Users tab: every user with type, source, groups, two-factor state and
// last sign-in; enable/disable, unlock, reset 2FA, set password (a hidden
// input, never prompt()), delete; and the add-user form.
import { useState } from 'preact/hooks';
import type { UserType } from '../../api/auth';
import {
  createUser,
  deleteUser,
  listUsers,
  resetTotp,
  unlockUser,
  updateUser,
} from '../../api/admin';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { useRequest } from '../../hooks/useRequest';
import { useAction } from './useAction';
import { DataTable } from '../../components/DataTable/DataTable';
import { InlineForm } from '../../components/InlineForm/InlineForm';

/** The user types an admin can give. */
export const TYPES: UserType[] = ['viewer', 'operator', 'admin'];

export function Users() {
  const users = useRequest('users', listUsers);
  const { error, run } = useAction(users.reload);
  // "set password": a form with a hidden input, not prompt() (which shows it in clear).
  const [pwFor, setPwFor] = useState<string | null>(null);
  const [newPw, setNewPw] = useState('');
  const [pwSet, setPwSet] = useState('');
  const [n, setN] = useState({ username: '', display_name: '', type: 'viewer' as UserType, password: '', groups: '' });
  return (
    <section aria-label="Users">
      <ErrorBox error={users.error ?? error} />
      <DataTable class="admin-table" columns={['user', 'type', 'source', 'groups', '2FA', 'state', 'last login', 'actions']}>
        {(users.data ?? []).map((u) => (
          <tr key={u.username} data-user={u.username}>
            <th scope="row">
              {u.username} <span class="muted">{u.display_name}</span>
            </th>
            <td>
              <select aria-label={`Type of ${u.username}`} value={u.type} onChange={(e) => run(() => updateUser(u.username, { type: e.currentTarget.value as UserType }))}>
                {TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </td>
            <td>{u.source}</td>
            <td>{u.groups.join(', ')}</td>
            <td>{u.totp.enabled ? `on (${u.totp.recovery_codes_left} codes)` : u.totp.required ? 'required, not set up' : 'off'}</td>
            <td>{u.disabled ? 'disabled' : u.locked_until ? `locked until ${u.locked_until}` : 'active'}</td>
            <td>{u.last_login ?? '—'}</td>
            <td class="actions">
              <button type="button" class="link" onClick={() => run(() => updateUser(u.username, { disabled: !u.disabled }))}>
                {u.disabled ? 'enable' : 'disable'}
              </button>
              {u.locked_until ? (
                <button type="button" class="link" onClick={() => run(() => unlockUser(u.username))}>
                  unlock
                </button>
              ) : null}
              {u.totp.enabled ? (
                <button type="button" class="link" onClick={() => confirm(`Reset two-factor sign-in of ${u.username}?`) && run(() => resetTotp(u.username))}>
                  reset 2FA
                </button>
              ) : null}
              {u.source === 'local' ? (
                <button
                  type="button"
                  class="link"
                  onClick={() => {
                    setPwFor(u.username);
                    setNewPw('');
                    setPwSet('');
                  }}
                >
                  set password
                </button>
              ) : null}
              <button type="button" class="link danger" onClick={() => confirm(`Delete ${u.username} and their dashboards?`) && run(() => deleteUser(u.username))}>
                delete
              </button>
            </td>
          </tr>
        ))}
      </DataTable>
      {pwFor !== null ? (
        <InlineForm
          label={`Set the password of ${pwFor}`}
          onSubmit={() => {
            const name = pwFor;
            run(
              () => updateUser(name, { password: newPw }),
              () => {
                setPwFor(null);
                setNewPw('');
                setPwSet(`Password of ${name} set.`);
              },
            );
          }}
        >
          <label class="inline">
            New password for {pwFor}
            <input aria-label="New password" type="password" autocomplete="new-password" value={newPw} onInput={(e) => setNewPw(e.currentTarget.value)} required autoFocus />
          </label>
          <button type="submit" class="primary">
            Set password
          </button>
          <button type="button" onClick={() => setPwFor(null)}>
            Cancel
          </button>
        </InlineForm>
      ) : null}
      {pwSet ? (
        <p class="note" role="status">
          {pwSet}
        </p>
      ) : null}
      <InlineForm
        label="New user"
        onSubmit={() => {
          const groups = n.groups.split(',').map((g) => g.trim()).filter(Boolean);
          run(
            () => createUser({ username: n.username, display_name: n.display_name, type: n.type, password: n.password, groups }),
            () => setN({ username: '', display_name: '', type: 'viewer', password: '', groups: '' }),
          );
        }}
      >
        <input aria-label="User name" placeholder="user name" value={n.username} onInput={(e) => setN({ ...n, username: e.currentTarget.value })} required />
        <input aria-label="Display name" placeholder="display name" value={n.display_name} onInput={(e) => setN({ ...n, display_name: e.currentTarget.value })} />
        <select aria-label="Type" value={n.type} onChange={(e) => setN({ ...n, type: e.currentTarget.value as UserType })}>
          {TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
        <input aria-label="Password" type="password" autocomplete="new-password" placeholder="password" value={n.password} onInput={(e) => setN({ ...n, password: e.currentTarget.value })} required />
        <input aria-label="Groups" placeholder="groups (comma-separated)" value={n.groups} onInput={(e) => setN({ ...n, groups: e.currentTarget.value })} />
        <button type="submit" class="primary">
          Add user
        </button>
      </InlineForm>
    </section>
  );
}
