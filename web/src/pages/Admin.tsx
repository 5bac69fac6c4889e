// Administration: users, groups, assignments (which sources who may read),
// LDAP settings, the auth policy and the audit log. Every change is audited
// by the server; this page only calls the API of docs/specs/ui-api.md §4–§11.
import { useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import type { UserType } from '../api/auth';
import {
  addMember,
  audit,
  authPolicy,
  createAssignment,
  createGroup,
  createUser,
  deleteAssignment,
  deleteGroup,
  deleteUser,
  ldapSettings,
  listAssignments,
  listGroups,
  listUsers,
  removeMember,
  resetTotp,
  saveLdapSettings,
  testLdap,
  unlockUser,
  updateGroup,
  updateUser,
  type AuditQuery,
  type LdapSettings,
} from '../api/admin';
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { toApiError, useRequest } from '../hooks/useRequest';
import { navigate, urlOf, type Loc } from '../lib/router';
import { patternText } from './Account';

const TABS = ['users', 'groups', 'assignments', 'ldap', 'audit'] as const;
type Tab = (typeof TABS)[number];
const TYPES: UserType[] = ['viewer', 'operator', 'admin'];

/** Runs an admin call, then reloads the list; `done` runs after a success
 * (an add form empties itself, so the next entry does not start from the last). */
function useAction(reload: () => void): { error: ApiError | null; run: (f: () => Promise<unknown>, done?: () => void) => void } {
  const [error, setError] = useState<ApiError | null>(null);
  const run = (f: () => Promise<unknown>, done?: () => void): void => {
    setError(null);
    f().then(
      () => {
        done?.();
        reload();
      },
      (e: unknown) => setError(toApiError(e)),
    );
  };
  return { error, run };
}

function Users() {
  const [tick, setTick] = useState(0);
  const users = useRequest(`users#${tick}`, listUsers);
  const { error, run } = useAction(() => setTick((t) => t + 1));
  // "set password": a form with a hidden input, not prompt() (which shows it in clear).
  const [pwFor, setPwFor] = useState<string | null>(null);
  const [newPw, setNewPw] = useState('');
  const [pwSet, setPwSet] = useState('');
  const [n, setN] = useState({ username: '', display_name: '', type: 'viewer' as UserType, password: '', groups: '' });
  return (
    <section aria-label="Users">
      <ErrorBox error={users.error ?? error} />
      <table class="admin-table">
        <thead>
          <tr>
            <th scope="col">user</th>
            <th scope="col">type</th>
            <th scope="col">source</th>
            <th scope="col">groups</th>
            <th scope="col">2FA</th>
            <th scope="col">state</th>
            <th scope="col">last login</th>
            <th scope="col">actions</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
      {pwFor !== null ? (
        <form
          class="inline-form"
          aria-label={`Set the password of ${pwFor}`}
          onSubmit={(e) => {
            e.preventDefault();
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
        </form>
      ) : null}
      {pwSet ? (
        <p class="note" role="status">
          {pwSet}
        </p>
      ) : null}
      <form
        class="inline-form"
        aria-label="New user"
        onSubmit={(e) => {
          e.preventDefault();
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
      </form>
    </section>
  );
}

function Groups() {
  const [tick, setTick] = useState(0);
  const groups = useRequest(`groups#${tick}`, listGroups);
  const { error, run } = useAction(() => setTick((t) => t + 1));
  const [name, setName] = useState('');
  const [desc, setDesc] = useState('');
  return (
    <section aria-label="Groups">
      <ErrorBox error={groups.error ?? error} />
      <table class="admin-table">
        <thead>
          <tr>
            <th scope="col">group</th>
            <th scope="col">description</th>
            <th scope="col">requires 2FA</th>
            <th scope="col">members</th>
            <th scope="col">from LDAP</th>
            <th scope="col">actions</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
      <form
        class="inline-form"
        aria-label="New group"
        onSubmit={(e) => {
          e.preventDefault();
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
      </form>
    </section>
  );
}

function Assignments() {
  const [tick, setTick] = useState(0);
  const list = useRequest(`assignments#${tick}`, listAssignments);
  const { error, run } = useAction(() => setTick((t) => t + 1));
  const [a, setA] = useState({ kind: 'group' as 'user' | 'group', name: '', group: '', subgroup: '*', host: '*' });
  return (
    <section aria-label="Assignments">
      <p class="muted">A user sees the events whose group / subgroup / host match one of their own or their groups' patterns (<code>*</code> and <code>?</code> are wildcards).</p>
      <ErrorBox error={list.error ?? error} />
      <table class="admin-table">
        <thead>
          <tr>
            <th scope="col">for</th>
            <th scope="col">sources</th>
            <th scope="col">by</th>
            <th scope="col" />
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
      <form
        class="inline-form"
        aria-label="New assignment"
        onSubmit={(e) => {
          e.preventDefault();
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
      </form>
    </section>
  );
}

/** The fields of the LDAP settings, offered when there are none yet. */
const LDAP_EXAMPLE: LdapSettings = {
  url: 'ldaps://ldap.example.com',
  tls: 'ldaps',
  ca_file: null,
  bind_dn: 'uid={username},ou=people,dc=example,dc=com',
  search_base: null,
  search_filter: null,
  search_bind_dn: null,
  group_attribute: 'memberOf',
  group_search_base: null,
  group_search_filter: null,
  group_name_attribute: null,
  default_type: 'viewer',
  group_map: [],
  timeout: '5s',
};

/** The settings in the text box, or a clear error (not the parser's "Unexpected end of JSON input"). */
function parseLdap(json: string): LdapSettings {
  try {
    return JSON.parse(json) as LdapSettings;
  } catch (e) {
    const why = json.trim() === '' ? 'they are empty' : e instanceof Error ? e.message : String(e);
    throw new ApiError('invalid_request', `The LDAP settings are not valid JSON (${why}): fill in the fields of the example.`, 0);
  }
}

function Ldap() {
  const [tick, setTick] = useState(0);
  const state = useRequest(`ldap#${tick}`, ldapSettings);
  const policy = useRequest('policy', authPolicy);
  const { error, run } = useAction(() => setTick((t) => t + 1));
  const [text, setText] = useState<string | null>(null);
  const [tu, setTu] = useState('');
  const [tp, setTp] = useState('');
  const [result, setResult] = useState<string>('');
  const s = state.data;
  const editable = s?.source !== 'config';
  const json = text ?? JSON.stringify(s?.settings ?? (editable ? LDAP_EXAMPLE : null), null, 2);
  return (
    <section aria-label="LDAP and sign-in policy">
      <ErrorBox error={state.error ?? policy.error ?? error} />
      {policy.data ? (
        <div class="card">
          <h2>Sign-in policy (from the config file)</h2>
          <ul>
            <li>
              Sessions end after {policy.data.session.idle_timeout} idle, {policy.data.session.absolute_timeout} at most
            </li>
            <li>
              Lockout after {policy.data.lockout.threshold} failures in {policy.data.lockout.window}, for {policy.data.lockout.duration}
            </li>
            <li>Passwords of at least {policy.data.password_min_length} characters</li>
            <li>Two-factor required for: {policy.data.totp.require_types.join(', ') || 'nobody by type'} (and members of groups that require it)</li>
          </ul>
        </div>
      ) : null}
      <div class="card">
        <h2>LDAP</h2>
        <p>
          Settings come from: <strong>{s?.source ?? '…'}</strong>
          {s?.source === 'config' ? ' (read-only here: change [auth.ldap] in the config file)' : ''}
        </p>
        <label>
          Settings (JSON)
          <textarea rows={14} class="mono" value={json} readOnly={!editable} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        {editable ? (
          <button
            type="button"
            class="primary"
            onClick={() =>
              run(async () => {
                await saveLdapSettings(parseLdap(json));
                setText(null);
              })
            }
          >
            Save LDAP settings
          </button>
        ) : null}
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              const r = await testLdap(tu, tp, text ? parseLdap(text) : undefined);
              setResult(r.ok ? `OK: ${r.dn} → groups ${r.groups.join(', ') || 'none'}, type ${r.type}` : `Failed: ${r.error}`);
            });
          }}
        >
          <input aria-label="Test user name" placeholder="test user" value={tu} onInput={(e) => setTu(e.currentTarget.value)} required />
          <input aria-label="Test password" type="password" placeholder="password" value={tp} onInput={(e) => setTp(e.currentTarget.value)} required />
          <button type="submit">Test sign-in</button>
        </form>
        {result ? <p role="status">{result}</p> : null}
      </div>
    </section>
  );
}

function Audit() {
  const [q, setQ] = useState<AuditQuery>({ from: 'now-7d', size: 100 });
  const [form, setForm] = useState({ actor: '', action: '', q: '' });
  const page = useRequest(JSON.stringify(q), (s) => audit(q, s));
  return (
    <section aria-label="Audit log">
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          setQ({ from: 'now-7d', size: 100, actor: form.actor, action: form.action, q: form.q });
        }}
      >
        <input aria-label="Actor" placeholder="actor" value={form.actor} onInput={(e) => setForm({ ...form, actor: e.currentTarget.value })} />
        <input aria-label="Action prefix" placeholder="action (e.g. user.)" value={form.action} onInput={(e) => setForm({ ...form, action: e.currentTarget.value })} />
        <input aria-label="Text" placeholder="text" value={form.q} onInput={(e) => setForm({ ...form, q: e.currentTarget.value })} />
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={page.error} />
      <table class="admin-table audit">
        <thead>
          <tr>
            <th scope="col">time</th>
            <th scope="col">actor</th>
            <th scope="col">action</th>
            <th scope="col">target</th>
            <th scope="col">outcome</th>
            <th scope="col">detail</th>
            <th scope="col">from</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
      {page.data?.next ? (
        <button type="button" onClick={() => setQ({ ...q, before: page.data?.next ?? '' })}>
          Older
        </button>
      ) : null}
    </section>
  );
}

/** The administration page (`/admin?tab=users`). */
export function AdminPage({ loc }: { loc: Loc }) {
  const tab = (TABS as readonly string[]).includes(loc.params.get('tab') ?? '') ? (loc.params.get('tab') as Tab) : 'users';
  return (
    <main id="main" class="admin-page" tabIndex={-1}>
      <h1>Administration</h1>
      <div role="tablist" class="tabs" aria-label="Administration">
        {TABS.map((t) => (
          <button key={t} type="button" role="tab" aria-selected={t === tab} class={t === tab ? 'active' : ''} onClick={() => navigate(urlOf('/admin', { tab: t }), true)}>
            {t === 'ldap' ? 'LDAP & policy' : t[0]?.toUpperCase() + t.slice(1)}
          </button>
        ))}
      </div>
      <div role="tabpanel">
        {tab === 'users' ? <Users /> : tab === 'groups' ? <Groups /> : tab === 'assignments' ? <Assignments /> : tab === 'ldap' ? <Ldap /> : <Audit />}
      </div>
    </main>
  );
}
