// The shared core of the per-endpoint hooks: runs a request whenever `key`
// changes, aborts the previous one (and the last one on unmount), and keeps
// loading / error / data apart so components never juggle promises.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, isAbort } from '../api/client';

/** What a request hook returns. */
export interface RequestState<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  /** Runs the request again with the same key. */
  reload: () => void;
}

/** Turns anything thrown into an [`ApiError`]. */
export function toApiError(e: unknown): ApiError {
  return e instanceof ApiError ? e : new ApiError('internal', String(e), 0);
}

/**
 * Runs `run(signal)` when `key` changes (a `null` key runs nothing). The data
 * of the previous key stays visible while the next one loads.
 */
export function useRequest<T>(key: string | null, run: (signal: AbortSignal) => Promise<T>): RequestState<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(false);
  const [tick, setTick] = useState(0);
  const runRef = useRef(run);
  runRef.current = run;

  useEffect(() => {
    if (key === null) return undefined;
    const ctrl = new AbortController();
    setLoading(true);
    runRef.current(ctrl.signal).then(
      (d) => {
        if (ctrl.signal.aborted) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (ctrl.signal.aborted || isAbort(e)) return;
        setError(toApiError(e));
        setLoading(false);
      },
    );
    return () => ctrl.abort();
  }, [key, tick]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}
