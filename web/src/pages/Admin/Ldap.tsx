// The "LDAP & policy" tab: the sign-in policy from the config file, and the
// LDAP settings as a form (one labelled field per setting, a row per group
// mapping) with the connection test. Settings from the config file are shown
// read-only; settings from the UI are saved through the API.
import { useState } from 'preact/hooks';
import { authPolicy, ldapSettings, saveLdapSettings, testLdap, type LdapSettings } from '../../api/admin';
import type { UserType } from '../../api/auth';
import { ApiError } from '../../api/client';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { useRequest } from '../../hooks/useRequest';
import { TYPES } from './Users';
import { useAction } from './useAction';
import { DataTable } from '../../components/DataTable/DataTable';

/** One group mapping row: LDAP group → sluice groups (comma-separated) and an optional type. */
export interface MapRow {
  ldap: string;
  groups: string;
  type: UserType | '';
}

/** The form's state: every setting as the text of its input. */
export interface LdapForm {
  url: string;
  tls: LdapSettings['tls'];
  ca_file: string;
  bind_dn: string;
  search_base: string;
  search_filter: string;
  search_bind_dn: string;
  /** Empty: keep the stored one. */
  search_bind_password: string;
  group_attribute: string;
  group_search_base: string;
  group_search_filter: string;
  group_name_attribute: string;
  default_type: UserType;
  timeout: string;
  group_map: MapRow[];
}

/** Examples shown as placeholders (never saved unless typed). */
export const LDAP_PLACEHOLDERS: Partial<Record<keyof LdapForm, string>> = {
  url: 'ldaps://ldap.example.com',
  ca_file: '/etc/ssl/certs/ldap-ca.pem',
  bind_dn: 'uid={username},ou=people,dc=example,dc=com',
  search_base: 'ou=people,dc=example,dc=com',
  search_filter: '(uid={username})',
  search_bind_dn: 'cn=reader,dc=example,dc=com',
  group_attribute: 'memberOf',
  group_search_base: 'ou=groups,dc=example,dc=com',
  group_search_filter: '(member={dn})',
  group_name_attribute: 'cn',
  timeout: '5s',
};

/** The form for stored settings (or an empty one with the defaults). */
export function formOf(s: LdapSettings | null): LdapForm {
  const t = (v: string | null | undefined): string => v ?? '';
  return {
    url: t(s?.url),
    tls: s?.tls ?? 'ldaps',
    ca_file: t(s?.ca_file),
    bind_dn: t(s?.bind_dn),
    search_base: t(s?.search_base),
    search_filter: t(s?.search_filter),
    search_bind_dn: t(s?.search_bind_dn),
    search_bind_password: '',
    group_attribute: s ? t(s.group_attribute) : 'memberOf',
    group_search_base: t(s?.group_search_base),
    group_search_filter: t(s?.group_search_filter),
    group_name_attribute: t(s?.group_name_attribute),
    default_type: s?.default_type ?? 'viewer',
    timeout: s?.timeout ?? '5s',
    group_map: (s?.group_map ?? []).map((m) => ({ ldap: m.ldap, groups: m.groups.join(', '), type: m.type ?? '' })),
  };
}

/** The settings the API takes, or an error naming the field to fix. */
export function settingsOf(f: LdapForm): LdapSettings {
  const bad = (message: string): ApiError => new ApiError('invalid_request', message, 0);
  const url = f.url.trim();
  if (url === '') throw bad(`Fill in the LDAP URL (for example ${LDAP_PLACEHOLDERS.url}).`);
  if (!/^ldaps?:\/\/\S+$/.test(url)) throw bad(`The LDAP URL must start with ldap:// or ldaps:// (got "${url}").`);
  if (f.bind_dn.trim() === '' && f.search_base.trim() === '') {
    throw bad('Fill in either the bind DN template (direct bind) or the search base (search, then bind).');
  }
  if (f.bind_dn.trim() !== '' && f.search_base.trim() !== '') {
    throw bad('Fill in only one of the bind DN template (direct bind) and the search base (search, then bind).');
  }
  const opt = (v: string): string | null => (v.trim() === '' ? null : v.trim());
  const group_map = f.group_map
    .filter((r) => r.ldap.trim() !== '' || r.groups.trim() !== '')
    .map((r, i) => {
      const groups = r.groups.split(',').map((g) => g.trim()).filter(Boolean);
      if (r.ldap.trim() === '') throw bad(`Group mapping ${i + 1}: fill in the LDAP group.`);
      if (groups.length === 0 && r.type === '') throw bad(`Group mapping ${i + 1}: give sluice groups or a user type.`);
      return { ldap: r.ldap.trim(), groups, type: r.type === '' ? null : r.type };
    });
  const out: LdapSettings = {
    url,
    tls: f.tls,
    ca_file: opt(f.ca_file),
    bind_dn: opt(f.bind_dn),
    search_base: opt(f.search_base),
    search_filter: opt(f.search_filter),
    search_bind_dn: opt(f.search_bind_dn),
    group_search_base: opt(f.group_search_base),
    default_type: f.default_type,
    group_map,
    timeout: f.timeout.trim() || '5s',
  };
  // These three have server-side defaults: an empty input leaves the key
  // out (the server refuses null for them).
  const group_attribute = opt(f.group_attribute);
  if (group_attribute !== null) out.group_attribute = group_attribute;
  const group_search_filter = opt(f.group_search_filter);
  if (group_search_filter !== null) out.group_search_filter = group_search_filter;
  const group_name_attribute = opt(f.group_name_attribute);
  if (group_name_attribute !== null) out.group_name_attribute = group_name_attribute;
  if (f.search_bind_password !== '') out.search_bind_password = f.search_bind_password;
  return out;
}

/** The text inputs of the form, in order: (field, label, hint). */
const TEXT_FIELDS: [keyof LdapForm, string, string][] = [
  ['url', 'LDAP URL', 'ldap:// or ldaps://, host and optional port'],
  ['ca_file', 'CA file', 'PEM file on the server to verify the LDAP certificate (empty: the system roots)'],
  ['bind_dn', 'Bind DN template', 'direct bind: {username} is replaced by the sign-in name'],
  ['search_base', 'Search base', 'or search for the user first, under this base…'],
  ['search_filter', 'Search filter', '…with this filter ({username} replaced)'],
  ['search_bind_dn', 'Search bind DN', 'who searches (empty: anonymous)'],
  ['group_attribute', 'Group attribute', "the user entry's attribute listing its groups"],
  ['group_search_base', 'Group search base', 'or search groups under this base…'],
  ['group_search_filter', 'Group search filter', '…with this filter ({dn} is the user)'],
  ['group_name_attribute', 'Group name attribute', 'the attribute naming a found group'],
  ['timeout', 'Timeout', 'connect and each operation, e.g. 5s'],
];

export function Ldap() {
  const state = useRequest('ldap', ldapSettings);
  const policy = useRequest('policy', authPolicy);
  const { error, run } = useAction(state.reload);
  const [edited, setEdited] = useState<LdapForm | null>(null);
  const [tu, setTu] = useState('');
  const [tp, setTp] = useState('');
  const [result, setResult] = useState<string>('');
  const [saved, setSaved] = useState('');
  const s = state.data;
  const editable = s !== null && s.source !== 'config';
  const form = edited ?? formOf(s?.settings ?? null);
  const set = (patch: Partial<LdapForm>): void => {
    setSaved('');
    setEdited({ ...form, ...patch });
  };
  const setRow = (i: number, patch: Partial<MapRow>): void => set({ group_map: form.group_map.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
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
      <form
        class="card ldap-form"
        aria-label="LDAP settings"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          run(
            async () => {
              await saveLdapSettings(settingsOf(form));
            },
            () => {
              setEdited(null);
              setSaved('LDAP settings saved.');
            },
          );
        }}
      >
        <h2>LDAP</h2>
        <p>
          Settings come from: <strong>{s?.source ?? '…'}</strong>
          {s?.source === 'config' ? ' (read-only here: change [auth.ldap] in the config file)' : ''}
        </p>
        <fieldset disabled={!editable}>
          <div class="form-grid">
            {TEXT_FIELDS.slice(0, 1).map(([k, label, hint]) => (
              <TextField key={k} name={k} label={label} hint={hint} form={form} set={set} />
            ))}
            <label>
              TLS
              <select aria-label="TLS" value={form.tls} onChange={(e) => set({ tls: e.currentTarget.value as LdapForm['tls'] })}>
                <option value="ldaps">ldaps (TLS from the start)</option>
                <option value="starttls">StartTLS</option>
                <option value="none">none (plain text)</option>
              </select>
            </label>
            {TEXT_FIELDS.slice(1, 6).map(([k, label, hint]) => (
              <TextField key={k} name={k} label={label} hint={hint} form={form} set={set} />
            ))}
            <label>
              Search bind password
              <input
                aria-label="Search bind password"
                type="password"
                autocomplete="new-password"
                value={form.search_bind_password}
                placeholder={s?.settings?.search_bind_password_set ? 'set (leave empty to keep it)' : 'not set'}
                onInput={(e) => set({ search_bind_password: e.currentTarget.value })}
              />
            </label>
            {TEXT_FIELDS.slice(6).map(([k, label, hint]) => (
              <TextField key={k} name={k} label={label} hint={hint} form={form} set={set} />
            ))}
            <label>
              Default user type
              <select aria-label="Default user type" value={form.default_type} onChange={(e) => set({ default_type: e.currentTarget.value as UserType })}>
                {TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </label>
          </div>
          <h3>Group mapping</h3>
          <DataTable class="admin-table" columns={['LDAP group', 'sluice groups (comma-separated)', 'user type', '']}>
            {form.group_map.map((r, i) => (
              <tr key={i}>
                <td>
                  <input aria-label={`LDAP group ${i + 1}`} placeholder="cn=ops,ou=groups,dc=example,dc=com" value={r.ldap} onInput={(e) => setRow(i, { ldap: e.currentTarget.value })} />
                </td>
                <td>
                  <input aria-label={`Groups of mapping ${i + 1}`} placeholder="ops" value={r.groups} onInput={(e) => setRow(i, { groups: e.currentTarget.value })} />
                </td>
                <td>
                  <select aria-label={`Type of mapping ${i + 1}`} value={r.type} onChange={(e) => setRow(i, { type: e.currentTarget.value as UserType | '' })}>
                    <option value="">(default)</option>
                    {TYPES.map((t) => (
                      <option key={t}>{t}</option>
                    ))}
                  </select>
                </td>
                <td>
                  <button type="button" class="link danger" onClick={() => set({ group_map: form.group_map.filter((_, j) => j !== i) })}>
                    remove
                  </button>
                </td>
              </tr>
            ))}
          </DataTable>
          <button type="button" onClick={() => set({ group_map: [...form.group_map, { ldap: '', groups: '', type: '' }] })}>
            Add group mapping
          </button>{' '}
          <button type="submit" class="primary">
            Save LDAP settings
          </button>
        </fieldset>
        {saved ? (
          <p class="note" role="status">
            {saved}
          </p>
        ) : null}
      </form>
      <form
        class="card inline-form"
        aria-label="Test LDAP sign-in"
        onSubmit={(e) => {
          e.preventDefault();
          setResult('');
          run(async () => {
            const r = await testLdap(tu, tp, edited ? settingsOf(edited) : undefined);
            setResult(r.ok ? `OK: ${r.dn} → groups ${r.groups.join(', ') || 'none'}, type ${r.type}` : `Failed: ${r.error}`);
          });
        }}
      >
        <span class="muted">{edited ? 'Tests the settings above, unsaved.' : 'Tests the saved settings.'}</span>
        <input aria-label="Test user name" placeholder="test user" value={tu} onInput={(e) => setTu(e.currentTarget.value)} required />
        <input aria-label="Test password" type="password" placeholder="password" value={tp} onInput={(e) => setTp(e.currentTarget.value)} required />
        <button type="submit">Test sign-in</button>
        {result ? <p role="status">{result}</p> : null}
      </form>
    </section>
  );
}

/** One labelled text input of the form, with its example as placeholder. */
function TextField({ name, label, hint, form, set }: { name: keyof LdapForm; label: string; hint: string; form: LdapForm; set: (p: Partial<LdapForm>) => void }) {
  return (
    <label title={hint}>
      {label}
      <input aria-label={label} value={form[name] as string} placeholder={LDAP_PLACEHOLDERS[name] ?? ''} onInput={(e) => set({ [name]: e.currentTarget.value } as Partial<LdapForm>)} />
      <small class="muted">{hint}</small>
    </label>
  );
}
