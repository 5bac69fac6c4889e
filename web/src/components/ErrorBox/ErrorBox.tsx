// An error from the API, shown where the thing that failed would be.
import type { ApiError } from '../../api/client';

/** Props of [`ErrorBox`]. */
export interface ErrorBoxProps {
  error: ApiError | null;
}

const HINT: Partial<Record<string, string>> = {
  no_store: 'This node has no search store configured.',
  unauthorized: 'Sign in again.',
  network: 'Is the node running?',
};

/** Renders nothing without an error. */
export function ErrorBox({ error }: ErrorBoxProps) {
  if (!error) return null;
  const hint = HINT[error.type];
  return (
    <div class="error-box" role="alert" data-error-type={error.type}>
      <strong>{error.message}</strong>
      {hint ? <span> — {hint}</span> : null}
    </div>
  );
}
