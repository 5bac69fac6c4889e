// Administration: users, groups, assignments (which sources who may read),
// LDAP settings, the auth policy and the audit log — one file per tab in
// this folder. Every change is audited by the server; these tabs only call
// the API of docs/specs/ui-api.md §4–§11.
import { navigate, urlOf, type Loc } from '../../lib/router';
import { Assignments } from './Assignments';
import { Audit } from './Audit';
import { Groups } from './Groups';
import { Ldap } from './Ldap';
import { Users } from './Users';

/** The tabs, in order (`/admin?tab=…`). */
export const TABS = ['users', 'groups', 'assignments', 'ldap', 'audit'] as const;
type Tab = (typeof TABS)[number];

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
