// `POST /api/v1/search` with infinite scroll: the first page when the
// request changes, then `loadMore()` appends the page after `next`.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { isAbort, type ApiError } from '../api/client';
import { search } from '../api/search';
import type { Hit, SearchRequest } from '../api/types';
import { toApiError } from './useRequest';

/** The search hook's state. */
export interface SearchState {
  hits: Hit[];
  total: number | null;
  /** The request whose answer `total` and `hits` are (null before the
   * first answer and after an error), so a reader can tell a stale total
   * from the current request's. */
  answered: SearchRequest | null;
  tookMs: number | null;
  loading: boolean;
  error: ApiError | null;
  /** Whether there is a page after the last one loaded. */
  more: boolean;
  loadMore: () => void;
}

/** Searches `req` (re-run when `key` changes; null runs nothing). */
export function useSearch(req: SearchRequest, key: string | null): SearchState {
  const [hits, setHits] = useState<Hit[]>([]);
  const [total, setTotal] = useState<number | null>(null);
  const [answered, setAnswered] = useState<SearchRequest | null>(null);
  const [tookMs, setTookMs] = useState<number | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const ctrl = useRef<AbortController | null>(null);
  const reqRef = useRef(req);
  reqRef.current = req;

  const fetchPage = useCallback((after: string | null) => {
    ctrl.current?.abort();
    const c = new AbortController();
    ctrl.current = c;
    setLoading(true);
    const asked = reqRef.current;
    search({ ...reqRef.current, search_after: after }, c.signal).then(
      (r) => {
        if (c.signal.aborted) return;
        setHits((h) => (after ? [...h, ...r.hits] : r.hits));
        setTotal(r.total);
        setAnswered(asked);
        setTookMs(r.took_ms);
        setNext(r.next);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (c.signal.aborted || isAbort(e)) return;
        setError(toApiError(e));
        if (!after) {
          setHits([]);
          setTotal(null);
          setAnswered(null);
          setTookMs(null);
          setNext(null);
        }
        setLoading(false);
      },
    );
  }, []);

  useEffect(() => {
    if (key === null) return undefined;
    fetchPage(null);
    return () => ctrl.current?.abort();
  }, [key, fetchPage]);

  const loadMore = useCallback(() => {
    if (next && !loading) fetchPage(next);
  }, [next, loading, fetchPage]);

  return { hits, total, answered, tookMs, loading, error, more: next !== null, loadMore };
}
