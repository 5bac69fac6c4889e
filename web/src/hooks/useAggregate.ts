// `POST /api/v1/aggregate`, re-run when the request (or `refresh`) changes.
import { aggregate } from '../api/search';
import type { AggregateRequest, AggregateResponse } from '../api/types';
import { useRequest, type RequestState } from './useRequest';

/** Aggregates `req`; `null` runs nothing. `refresh` forces a new run. */
export function useAggregate(req: AggregateRequest | null, refresh = 0): RequestState<AggregateResponse> {
  const key = req ? `${JSON.stringify(req)}#${refresh}` : null;
  return useRequest(key, (signal) => aggregate(req as AggregateRequest, signal));
}
