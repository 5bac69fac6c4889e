// Node statistics: `GET /api/v1/node/stats` (checks `operations:read`,
// docs/specs/ui-api.md §12), or the unauthenticated `GET /_node/stats` on a
// node that does not have the former yet (404).
import { ApiError, request } from './client';
import type { NodeStats } from './types';

let legacy = false;

/** The `/_node/stats` document. */
export async function nodeStats(signal?: AbortSignal): Promise<NodeStats> {
  if (!legacy) {
    try {
      return await request<NodeStats>('GET', '/api/v1/node/stats', undefined, signal);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
      legacy = true;
    }
  }
  return request<NodeStats>('GET', '/_node/stats', undefined, signal);
}
