// Runs an administration call, shows its error, and reloads the tab's list
// after a success: the one way every Admin tab changes something.
import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { toApiError } from '../../hooks/useRequest';

/** Runs an admin call, then reloads the list; `done` runs after a success
 * (an add form empties itself, so the next entry does not start from the last). */
export function useAction(reload: () => void): { error: ApiError | null; run: (f: () => Promise<unknown>, done?: () => void) => void } {
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
