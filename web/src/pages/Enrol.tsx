// Two-factor enrolment: the QR code and secret of a new TOTP key, a code to
// confirm it, then the recovery codes — shown once.
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api/client';
import { totpConfirm, totpEnroll, type Enrolment } from '../api/auth';
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { toApiError } from '../hooks/useRequest';
import { navigate } from '../lib/router';

/** The enrolment page. */
export function EnrolPage({ next, onDone }: { next: string; onDone: () => void }) {
  const [enrol, setEnrol] = useState<Enrolment | null>(null);
  const [code, setCode] = useState('');
  const [codes, setCodes] = useState<string[] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  useEffect(() => {
    totpEnroll().then(setEnrol, (e: unknown) => setError(toApiError(e)));
  }, []);

  if (codes) {
    return (
      <main id="main" class="enrol-page">
        <section class="card">
          <h1>Recovery codes</h1>
          <p>
            Two-factor sign-in is on. Keep these codes somewhere safe: each signs you in once without your authenticator. <strong>They are shown only now.</strong>
          </p>
          <ol class="recovery-codes" id="recovery-codes">
            {codes.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ol>
          <button
            type="button"
            class="primary"
            onClick={() => {
              onDone();
              navigate(next, true);
            }}
          >
            I have saved them — continue
          </button>
        </section>
      </main>
    );
  }
  return (
    <main id="main" class="enrol-page">
      <form
        class="card"
        aria-label="Set up two-factor sign-in"
        onSubmit={(e) => {
          e.preventDefault();
          totpConfirm(code.replace(/\s/g, '')).then(setCodes, (err: unknown) => setError(toApiError(err)));
        }}
      >
        <h1>Set up two-factor sign-in</h1>
        <ErrorBox error={error} />
        {enrol ? (
          <>
            <p>Scan this code with an authenticator app (or type the key), then enter the 6-digit code it shows.</p>
            <img class="qr" src={enrol.qr_svg} alt="QR code of the authenticator key" width={200} height={200} />
            <p>
              Key: <code id="totp-secret">{enrol.secret}</code>
            </p>
            <label>
              Code
              <input name="code" autocomplete="one-time-code" inputMode="numeric" value={code} onInput={(e) => setCode(e.currentTarget.value)} required autoFocus />
            </label>
            <button type="submit" class="primary">
              Turn on
            </button>
          </>
        ) : (
          <p class="muted">Loading…</p>
        )}
      </form>
    </main>
  );
}
