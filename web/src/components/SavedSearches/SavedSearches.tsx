// Saved searches on the search page: a button opens the list of the saved
// searches the user may see (own, shared with one of their groups or with
// everyone) and a form that saves the current query, time range and columns
// under a name, shared like a dashboard.
import { useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { createSavedSearch, deleteSavedSearch, listSavedSearches, type SavedSearch } from '../../api/savedSearches';
import { useDismiss } from '../../hooks/useDismiss';
import { toApiError, useRequest } from '../../hooks/useRequest';
import { DEFAULT_RANGE, type TimeRange } from '../../lib/time';
import { ErrorBox } from '../ErrorBox/ErrorBox';

/** The search state a saved search holds. */
export interface SavedState {
  q: string;
  range: TimeRange;
  cols: string[];
}

/** Props of [`SavedSearches`]. */
export interface SavedSearchesProps {
  current: SavedState;
  onOpen: (s: SavedState) => void;
}

/** The search state of a saved search (its missing bounds are the defaults). */
export function stateOf(s: SavedSearch): SavedState {
  return { q: s.query, range: { from: s.from ?? DEFAULT_RANGE.from, to: s.to ?? DEFAULT_RANGE.to }, cols: s.columns };
}

/** Who sees a saved search besides its owner, in words. */
function sharedWith(s: SavedSearch): string {
  if (s.sharing.everyone) return 'everyone';
  return s.sharing.groups.join(', ');
}

/** The saved-searches button and its popover. */
export function SavedSearches({ current, onOpen }: SavedSearchesProps) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [everyone, setEveryone] = useState(false);
  const [groups, setGroups] = useState('');
  const [status, setStatus] = useState('');
  const [err, setErr] = useState<ApiError | null>(null);
  const root = useRef<HTMLDivElement>(null);
  const list = useRequest(open ? 'saved' : null, listSavedSearches);

  useDismiss(open, root, () => setOpen(false));

  const save = (e: Event): void => {
    e.preventDefault();
    setErr(null);
    setStatus('');
    const sharing = { everyone, groups: groups.split(',').map((g) => g.trim()).filter(Boolean) };
    createSavedSearch({ name: name.trim(), description: '', query: current.q, from: current.range.from, to: current.range.to, columns: current.cols, sharing }).then(
      (s) => {
        setStatus(`Saved “${s.name}”.`);
        setName('');
        setEveryone(false);
        setGroups('');
        list.reload();
      },
      (x: unknown) => setErr(toApiError(x)),
    );
  };

  const remove = (s: SavedSearch): void => {
    setErr(null);
    setStatus('');
    deleteSavedSearch(s.id).then(
      () => {
        setStatus(`Deleted “${s.name}”.`);
        list.reload();
      },
      (x: unknown) => setErr(toApiError(x)),
    );
  };

  const items = list.data ?? [];
  return (
    <div class="saved-searches" ref={root}>
      <button type="button" aria-haspopup="dialog" aria-expanded={open} onClick={() => setOpen(!open)}>
        Saved searches ▾
      </button>
      {open ? (
        <div class="popover saved-popover" role="dialog" aria-label="Saved searches">
          <div class="saved-list">
            <h3>Saved searches</h3>
            <ErrorBox error={list.error} />
            {list.data && items.length === 0 ? <p class="muted">None yet.</p> : null}
            <ul>
              {items.map((s) => (
                <li key={s.id} data-saved={s.name}>
                  <button
                    type="button"
                    class="link saved-open"
                    title={s.query || '(everything)'}
                    onClick={() => {
                      setOpen(false);
                      onOpen(stateOf(s));
                    }}
                  >
                    {s.name}
                  </button>{' '}
                  <span class="muted">by {s.owner}</span> {sharedWith(s) ? <span class="badge">{sharedWith(s)}</span> : null}
                  {s.can_edit ? (
                    <button type="button" class="link danger" aria-label={`Delete ${s.name}`} onClick={() => remove(s)}>
                      delete
                    </button>
                  ) : null}
                </li>
              ))}
            </ul>
          </div>
          <form class="saved-form" aria-label="Save this search" onSubmit={save}>
            <h3>Save this search</h3>
            <label>
              Name
              <input name="saved-name" aria-label="Search name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
            <label class="check">
              <input type="checkbox" checked={everyone} onChange={(e) => setEveryone(e.currentTarget.checked)} /> Share with everyone
            </label>
            <label>
              Share with groups
              <input name="saved-groups" aria-label="Share with groups (comma-separated)" placeholder="group-a, group-b" value={groups} onInput={(e) => setGroups(e.currentTarget.value)} />
            </label>
            <ErrorBox error={err} />
            {status ? <p role="status">{status}</p> : null}
            <button type="submit">Save search</button>
          </form>
        </div>
      ) : null}
    </div>
  );
}
