// Signing in: user name + password (local or LDAP, the server decides), then
// a TOTP or recovery code when the account has two factors; or an API token
// (static `[api.tokens]` or a user's `slt_…`), which is also the only way in
// on a node without the users API.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, errorOf, setCredentials } from '../api/client';
import { authConfig, login, loginTotp, type AuthConfig, type LoginResult } from '../api/auth';
import { toApiError } from '../hooks/useRequest';
import { navigate } from '../lib/router';

type Step = 'password' | 'totp' | 'token';

/** Props of [`LoginPage`]. */
export interface LoginProps {
  /** Where to go once signed in. */
  next: string;
}

/** What a login answer means for the page. */
export function afterLogin(r: LoginResult, next: string): { step: 'totp' } | { go: string } {
  if (r.status === 'totp_required') return { step: 'totp' };
  setCredentials({ kind: 'session', csrf: r.csrf_token, name: r.me.user.display_name || r.me.user.username });
  return { go: r.status === 'totp_enrollment_required' ? `/enrol?next=${encodeURIComponent(next)}` : next };
}

/** Throws unless `token` is accepted by the search API (checked before it becomes the tab's credentials). */
export async function checkToken(token: string): Promise<void> {
  let r: Response;
  try {
    r = await fetch('/api/v1/fields', { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
  } catch (e) {
    throw new ApiError('network', `cannot reach the server: ${String(e)}`, 0);
  }
  if (r.status === 401) throw new ApiError('invalid_credentials', 'That token is not valid on this node.', 401);
  // 503 no_store still proves the token: the node has no store to search.
  if (!r.ok && r.status !== 503) throw await errorOf(r);
}

/** Props of [`CodeField`]. */
export interface CodeFieldProps {
  /** A recovery code (`xxxx-xxxx-xxxx-xxxx`) rather than a 6-digit TOTP code. */
  recovery: boolean;
  value: string;
  onInput: (v: string) => void;
}

/**
 * The second-factor field. One input element per kind (`key`): an input
 * that had the TOTP `pattern` and is re-rendered without one keeps
 * `pattern=""` (Preact sets the property to ""), which refuses every
 * recovery code in both Chromium and Firefox.
 */
export function CodeField({ recovery, value, onInput }: CodeFieldProps) {
  return (
    <label>
      {recovery ? 'Recovery code' : 'Code'}
      {recovery ? (
        <input key="recovery" name="code" autocomplete="one-time-code" value={value} onInput={(e) => onInput(e.currentTarget.value)} required autoFocus />
      ) : (
        <input
          key="totp"
          name="code"
          autocomplete="one-time-code"
          inputMode="numeric"
          pattern="[0-9 ]{6,7}"
          value={value}
          onInput={(e) => onInput(e.currentTarget.value)}
          required
          autoFocus
        />
      )}
    </label>
  );
}

/** A sentence for a login error. */
export function loginMessage(e: ApiError): string {
  switch (e.type) {
    case 'invalid_credentials':
      return e.message.startsWith('That token') ? e.message : 'Wrong user name or password.';
    case 'invalid_code':
      return 'That code is wrong, expired or already used.';
    case 'locked':
      return `Too many failed attempts: try again in ${Math.ceil((e.retryAfter ?? 60) / 60)} min.`;
    case 'rate_limited':
      return `Too many attempts from here: wait ${e.retryAfter ?? 60} s.`;
    case 'unauthorized':
      return 'The sign-in took too long; start again.';
    default:
      return e.message;
  }
}

/** The login page. */
export function LoginPage({ next }: LoginProps) {
  const [config, setConfig] = useState<AuthConfig | null | 'none'>(null);
  const [step, setStep] = useState<Step>('password');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [recovery, setRecovery] = useState(false);
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    authConfig().then(setConfig, (e: unknown) => {
      // No users API on this node: tokens only.
      if (e instanceof ApiError && e.status === 404) {
        setConfig('none');
        setStep('token');
      } else setConfig('none');
    });
  }, []);

  const run = (f: () => Promise<void>): void => {
    setBusy(true);
    setError(null);
    f().then(
      () => setBusy(false),
      (e: unknown) => {
        const err = toApiError(e);
        setError(loginMessage(err));
        if (err.type === 'unauthorized' && step === 'totp') setStep('password');
        setBusy(false);
      },
    );
  };
  const handle = (r: LoginResult): void => {
    const a = afterLogin(r, next);
    if ('step' in a) {
      setStep('totp');
      setCode('');
    } else navigate(a.go, true);
  };

  return (
    <main id="main" class="login-page">
      <form
        class="card login"
        aria-label="Sign in"
        onSubmit={(e) => {
          e.preventDefault();
          if (step === 'password') run(async () => handle(await login(username.trim(), password)));
          else if (step === 'totp') run(async () => handle(await loginTotp(recovery ? { recovery_code: code.trim() } : { code: code.replace(/\s/g, '') })));
          else
            run(async () => {
              const t = token.trim();
              await checkToken(t);
              setCredentials({ kind: 'token', token: t, name: 'API token' });
              navigate(next, true);
            });
        }}
      >
        <h1>sluice</h1>
        {step === 'password' ? (
          <>
            <label>
              User name
              <input name="username" autocomplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} required autoFocus />
            </label>
            <label>
              Password
              <input name="password" type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} required />
            </label>
            {config && config !== 'none' && config.methods.includes('ldap') ? <p class="muted">Directory (LDAP) accounts use the same form.</p> : null}
          </>
        ) : step === 'totp' ? (
          <>
            <p>Enter the {recovery ? 'recovery code' : '6-digit code from your authenticator app'}.</p>
            <CodeField recovery={recovery} value={code} onInput={setCode} />
            <button type="button" class="link" onClick={() => setRecovery(!recovery)}>
              {recovery ? 'Use an authenticator code' : 'Use a recovery code'}
            </button>
          </>
        ) : (
          <label>
            API token
            <input name="token" type="password" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required autoFocus />
          </label>
        )}
        {error ? (
          <p class="error-box" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : step === 'totp' ? 'Verify' : 'Sign in'}
        </button>
        {config !== 'none' ? (
          <button type="button" class="link" onClick={() => setStep(step === 'token' ? 'password' : 'token')}>
            {step === 'token' ? 'Sign in with a user name' : 'Use an API token instead'}
          </button>
        ) : (
          <p class="muted">This node has no user accounts: sign in with an API token (<code>[api.tokens]</code>, e.g. <code>data/admin.token</code>).</p>
        )}
      </form>
    </main>
  );
}
