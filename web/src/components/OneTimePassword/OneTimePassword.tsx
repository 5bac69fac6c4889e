// Asks the administrator signed in with the password printed at the first
// start to replace it (issue #22): shown on every page until `/me` says the
// password is no longer the one-time one.

/** The reminder, or nothing. `here` is the current path: on the account
 * page, where the form is, it points down at the form instead of linking. */
export function OneTimePassword({ oneTime, here }: { oneTime: boolean; here: string }) {
  if (!oneTime) return null;
  return (
    <p class="one-time-password" role="alert">
      You signed in with the one-time password printed when sluice first started.{' '}
      {here === '/account' ? 'Replace it with the form below.' : <a href="/account">Replace it now</a>}
    </p>
  );
}
