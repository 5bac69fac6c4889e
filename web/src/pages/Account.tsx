// The caller's own account: who they are and what they may read, password,
// two-factor sign-in, API tokens.
import { useState } from 'preact/hooks';
import type { ApiError } from '../api/client';
import { changePassword, createToken, listTokens, revokeToken, totpDisable, totpNewRecoveryCodes, type Me } from '../api/auth';
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { Link } from '../components/Nav/Nav';
import { toApiError, useRequest } from '../hooks/useRequest';
import { TimeZoneSetting } from '../components/TimeZoneSetting/TimeZoneSetting';
import { InlineForm } from '../components/InlineForm/InlineForm';

/** `group/subgroup/host`. */
export function patternText(p: { group: string; subgroup?: string; host?: string }): string {
  return `${p.group}/${p.subgroup ?? '*'}/${p.host ?? '*'}`;
}

/** The account page. */
export function AccountPage({ me, onChange }: { me: Me | null; onChange: () => void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState('');
  const [cur, setCur] = useState('');
  const [pw, setPw] = useState('');
  const [code, setCode] = useState('');
  const [codes, setCodes] = useState<string[] | null>(null);
  const [tokName, setTokName] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const tokens = useRequest(me ? 'tokens' : null, (s) => listTokens(false, s));
  // The password form's own error: a wrong current password is said there,
  // not as the sign-in's "invalid username or password" at the top.
  const [pwError, setPwError] = useState('');
  const act = (f: () => Promise<unknown>, ok: string): void => {
    setError(null);
    setPwError('');
    // A notice of an earlier action would read as the answer to this one.
    setNotice('');
    f().then(
      () => {
        setNotice(ok);
        onChange();
        tokens.reload();
      },
      (e: unknown) => setError(toApiError(e)),
    );
  };
  if (!me) {
    return (
      <main id="main" class="account-page">
        <h1>Account</h1>
        <p>You are signed in with an API token; there is no user account behind it.</p>
        <TimeZoneSetting />
      </main>
    );
  }
  const u = me.user;
  return (
    <main id="main" class="account-page" tabIndex={-1}>
      <h1>
        {u.display_name || u.username} <span class="muted">({u.username}, {u.type}, {u.source})</span>
      </h1>
      <ErrorBox error={error} />
      {notice ? <p role="status" class="note">{notice}</p> : null}
      <TimeZoneSetting />
      <section class="card">
        <h2>What you can read</h2>
        <ul>{me.allowed.length ? me.allowed.map((p) => <li key={patternText(p)}><code>{patternText(p)}</code></li>) : <li>nothing yet — ask an administrator for an assignment</li>}</ul>
        <p class="muted">Groups: {u.groups.join(', ') || 'none'}</p>
      </section>
      <section class="card">
        <h2>Two-factor sign-in</h2>
        {u.totp.enabled ? (
          <>
            <p>
              On · {u.totp.recovery_codes_left} recovery codes left{u.totp.required ? ' · required for your account' : ''}
            </p>
            <label>
              Current code
              <input value={code} inputMode="numeric" onInput={(e) => setCode(e.currentTarget.value)} />
            </label>
            <button type="button" onClick={() => act(async () => setCodes(await totpNewRecoveryCodes(code)), 'New recovery codes made.')}>
              New recovery codes
            </button>
            {!u.totp.required ? (
              <button type="button" class="danger" onClick={() => act(() => totpDisable(code), 'Two-factor sign-in is off.')}>
                Turn off
              </button>
            ) : null}
            {codes ? (
              <ol class="recovery-codes">
                {codes.map((c) => (
                  <li key={c}>
                    <code>{c}</code>
                  </li>
                ))}
              </ol>
            ) : null}
          </>
        ) : (
          <p>
            Off. <Link href="/enrol?next=/account">Turn it on</Link>
          </p>
        )}
      </section>
      {u.source === 'local' ? (
        <form
          class="card"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            setPwError('');
            setNotice('');
            changePassword(cur, pw).then(
              () => {
                setNotice('Password changed; your other sessions were ended.');
                setCur('');
                setPw('');
                onChange();
              },
              (err: unknown) => {
                const e2 = toApiError(err);
                if (e2.type === 'invalid_credentials') setPwError('The current password is wrong.');
                else setError(e2);
              },
            );
          }}
        >
          <h2>Password</h2>
          <label>
            Current password
            <input type="password" autocomplete="current-password" value={cur} onInput={(e) => setCur(e.currentTarget.value)} required />
          </label>
          <label>
            New password
            <input type="password" autocomplete="new-password" value={pw} onInput={(e) => setPw(e.currentTarget.value)} required />
          </label>
          {pwError ? (
            <p class="error-box" role="alert" id="password-error">
              {pwError}
            </p>
          ) : null}
          <button type="submit">Change password</button>
        </form>
      ) : null}
      <section class="card">
        <h2>API tokens</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">name</th>
              <th scope="col">scope</th>
              <th scope="col">expires</th>
              <th scope="col">last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {(tokens.data ?? []).map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>{t.scope}</td>
                <td>{t.expires_at ?? 'never'}</td>
                <td>{t.last_used_at ?? '—'}</td>
                <td>
                  <button type="button" class="link danger" onClick={() => act(() => revokeToken(t.id), `Token ${t.name} revoked.`)}>
                    revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <InlineForm
          onSubmit={() => {
            act(async () => setSecret((await createToken({ name: tokName, scope: 'search', expires_in: '90d' })).secret), 'Token created.');
          }}
        >
          <label>
            New search token
            <input value={tokName} placeholder="name" onInput={(e) => setTokName(e.currentTarget.value)} required />
          </label>
          <button type="submit">Create (90 days)</button>
        </InlineForm>
        {secret ? (
          <p class="note">
            Copy it now, it is shown once: <code>{secret}</code>
          </p>
        ) : null}
      </section>
    </main>
  );
}
