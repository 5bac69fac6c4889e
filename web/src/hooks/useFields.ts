// `GET /api/v1/fields`, once per mount (or `reload()`).
import { fields } from '../api/search';
import type { FieldInfo } from '../api/types';
import { useRequest, type RequestState } from './useRequest';

/** The fields the caller's sources have. */
export function useFields(): RequestState<FieldInfo[]> {
  return useRequest('fields', (signal) => fields(signal));
}
