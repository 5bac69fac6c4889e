// `GET /api/v1/fields` for a time range (or all time), again whenever the range changes.
import { fields } from '../api/search';
import type { FieldInfo } from '../api/types';
import type { TimeRange } from '../lib/time';
import { useRequest, type RequestState } from './useRequest';

/** The fields of the caller's events in `range` (`null`: all stored events). */
export function useFields(range: TimeRange | null): RequestState<FieldInfo[]> {
  const key = range ? `fields\u0000${range.from}\u0000${range.to}` : 'fields';
  return useRequest(key, (signal) => fields(range, signal));
}
