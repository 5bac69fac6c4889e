// Saved searches (docs/specs/ui-api.md §10): a query, its time range and
// columns under a name, visible to the owner, to the groups it is shared
// with (or everyone) and to admins — like dashboards. Opening one runs it as
// the viewer, so sharing a search never shares data.
import { request } from './client';
import type { Sharing } from './dashboards';

/** A saved search as the server answers it. */
export interface SavedSearch {
  id: number;
  name: string;
  description: string;
  owner: string;
  query: string;
  from: string | null;
  to: string | null;
  columns: string[];
  sharing: Sharing;
  version: number;
  created_at: string;
  updated_at: string;
  can_edit: boolean;
}

/** What `POST /api/v1/saved-searches` takes. */
export type SavedSearchBody = Pick<SavedSearch, 'name' | 'description' | 'query' | 'from' | 'to' | 'columns' | 'sharing'>;

/** `GET /api/v1/saved-searches`: the ones the caller may see. */
export async function listSavedSearches(signal?: AbortSignal): Promise<SavedSearch[]> {
  return (await request<{ saved_searches: SavedSearch[] }>('GET', '/api/v1/saved-searches', undefined, signal)).saved_searches;
}

/** `POST /api/v1/saved-searches`. */
export function createSavedSearch(body: SavedSearchBody): Promise<SavedSearch> {
  return request<SavedSearch>('POST', '/api/v1/saved-searches', body);
}

/** `DELETE /api/v1/saved-searches/{id}`. */
export function deleteSavedSearch(id: number): Promise<void> {
  return request<void>('DELETE', `/api/v1/saved-searches/${id}`);
}
