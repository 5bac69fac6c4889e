// `GET /api/v1/tail` (Server-Sent Events): the newest events of a query,
// pausable, with the arrival rate over the last few seconds. While paused the
// stream stays open and events are counted but not shown; the stream is
// re-opened with a back-off when it breaks.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../api/client';
import { tailUrl } from '../api/search';
import { readSse } from '../api/sse';
import type { Hit } from '../api/types';
import { toApiError } from './useRequest';

/** Events kept on screen. */
export const TAIL_KEEP = 500;
/** Window of the rate indicator, ms. */
export const RATE_WINDOW_MS = 5000;

/** The live tail's state. */
export interface TailState {
  hits: Hit[];
  /** Events per second over the last [`RATE_WINDOW_MS`]. */
  rate: number;
  /** Events received since the tail (re)started. */
  received: number;
  connected: boolean;
  /** The server refused the query (a 4xx, e.g. a syntax error): no retries. */
  stopped: boolean;
  paused: boolean;
  error: ApiError | null;
  setPaused: (p: boolean) => void;
  clear: () => void;
}

/** Events per second from arrival times (ms) within `windowMs` of `now`. */
export function rateOf(arrivals: number[], now: number, windowMs = RATE_WINDOW_MS): number {
  const recent = arrivals.filter((t) => t > now - windowMs).length;
  return recent / (windowMs / 1000);
}

/** Tails `query`; `enabled = false` closes the stream. */
export function useTail(query: string, enabled = true): TailState {
  const [hits, setHits] = useState<Hit[]>([]);
  const [rate, setRate] = useState(0);
  const [received, setReceived] = useState(0);
  const [connected, setConnected] = useState(false);
  const [stopped, setStopped] = useState(false);
  const [paused, setPausedState] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const pausedRef = useRef(false);
  const arrivals = useRef<number[]>([]);
  const pending = useRef<Hit[]>([]);

  useEffect(() => {
    if (!enabled) return undefined;
    const ctrl = new AbortController();
    let attempt = 0;
    // A new query starts from an empty list: the events of the previous one
    // (shown or waiting for the next render) do not match it.
    setReceived(0);
    setHits([]);
    setError(null);
    setStopped(false);
    pending.current = [];
    arrivals.current = [];
    const loop = async (): Promise<void> => {
      while (!ctrl.signal.aborted) {
        try {
          await readSse(
            tailUrl(query),
            (data) => {
              if (ctrl.signal.aborted) return;
              let hit: Hit;
              try {
                hit = JSON.parse(data) as Hit;
              } catch {
                return;
              }
              arrivals.current.push(Date.now());
              setReceived((n) => n + 1);
              if (!pausedRef.current) pending.current.push(hit);
            },
            ctrl.signal,
            () => {
              attempt = 0;
              setConnected(true);
              setError(null);
            },
          );
        } catch (e) {
          setError(toApiError(e));
          if (toApiError(e).status >= 400 && toApiError(e).status < 500) {
            setConnected(false);
            setStopped(true);
            return;
          }
        }
        setConnected(false);
        if (ctrl.signal.aborted) return;
        attempt++;
        await new Promise((ok) => setTimeout(ok, Math.min(30_000, 500 * 2 ** attempt)));
      }
    };
    void loop();
    // Render in batches (a busy tail would otherwise re-render per event).
    const timer = setInterval(() => {
      const now = Date.now();
      arrivals.current = arrivals.current.filter((t) => t > now - RATE_WINDOW_MS);
      setRate(rateOf(arrivals.current, now));
      if (pending.current.length > 0) {
        const batch = pending.current.reverse();
        pending.current = [];
        setHits((h) => [...batch, ...h].slice(0, TAIL_KEEP));
      }
    }, 250);
    return () => {
      ctrl.abort();
      clearInterval(timer);
      setConnected(false);
    };
  }, [query, enabled]);

  const setPaused = useCallback((p: boolean) => {
    pausedRef.current = p;
    setPausedState(p);
  }, []);
  const clear = useCallback(() => setHits([]), []);
  return { hits, rate, received, connected, stopped, paused, error, setPaused, clear };
}
