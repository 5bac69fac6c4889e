// `GET /_node/stats`, polled, with a short history kept in the browser so the
// operations page can chart rates (from counter deltas) and queue depths.
import { useEffect, useRef, useState } from 'preact/hooks';
import { isAbort, type ApiError } from '../api/client';
import { nodeStats } from '../api/stats';
import type { NodeStats } from '../api/types';
import { toApiError } from './useRequest';

/** Samples kept (at the default 2 s interval: 5 minutes). */
export const HISTORY = 150;

/** One poll. */
export interface StatsSample {
  /** Epoch ms of the answer. */
  at: number;
  stats: NodeStats;
}

/** Events/s of a counter between two samples (0 after a reset). */
export function ratePerSec(prev: number, cur: number, dtMs: number): number {
  if (dtMs <= 0 || cur < prev) return 0;
  return ((cur - prev) * 1000) / dtMs;
}

/** Polls every `intervalMs`; returns the samples, oldest first. */
export function useNodeStats(intervalMs = 2000): { samples: StatsSample[]; error: ApiError | null } {
  const [samples, setSamples] = useState<StatsSample[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const ctrl = useRef<AbortController | null>(null);

  useEffect(() => {
    let stopped = false;
    const poll = (): void => {
      ctrl.current?.abort();
      const c = new AbortController();
      ctrl.current = c;
      nodeStats(c.signal).then(
        (stats) => {
          if (stopped) return;
          setSamples((s) => [...s, { at: Date.now(), stats }].slice(-HISTORY));
          setError(null);
        },
        (e: unknown) => {
          if (!stopped && !isAbort(e)) setError(toApiError(e));
        },
      );
    };
    poll();
    const t = setInterval(poll, intervalMs);
    return () => {
      stopped = true;
      clearInterval(t);
      ctrl.current?.abort();
    };
  }, [intervalMs]);

  return { samples, error };
}
