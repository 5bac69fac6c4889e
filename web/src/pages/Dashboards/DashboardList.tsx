// The list of dashboards (own and shared with the caller), delete, the
// form that creates a new one and opens it for editing, and the import of
// an exported JSON file as a new private dashboard.
import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { createDashboard, deleteDashboard, listDashboards, storedLocally } from '../../api/dashboards';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { Link } from '../../components/Nav/Nav';
import { toApiError, useRequest } from '../../hooks/useRequest';
import { navigate } from '../../lib/router';
import { parseImport } from './transfer';

/** The list of dashboards. */
export function DashboardListPage() {
  const list = useRequest('dashboards', (signal) => listDashboards(signal));
  const [title, setTitle] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [importError, setImportError] = useState('');
  const importFile = (file: File | undefined): void => {
    if (!file) return;
    setImportError('');
    file.text().then((text) => {
      let body;
      try {
        body = parseImport(text);
      } catch (e) {
        setImportError(`${file.name}: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
      createDashboard(body).then(
        (d) => navigate(`/dashboards/${d.id}`),
        (err: unknown) => setError(toApiError(err)),
      );
    }, (e: unknown) => setImportError(String(e)));
  };
  return (
    <main id="main" class="dashboards-page" tabIndex={-1}>
      <h1>Dashboards</h1>
      {storedLocally() ? <p class="note">This node does not store dashboards; they are kept in this browser only.</p> : null}
      <ErrorBox error={list.error ?? error} />
      <ul class="dashboard-list">
        {(list.data ?? []).map((d) => (
          <li key={d.id}>
            <Link href={`/dashboards/${d.id}`}>{d.title}</Link> <span class="muted">by {d.owner}</span>
            {d.sharing.everyone ? <span class="badge">shared</span> : d.sharing.groups.length > 0 ? <span class="badge">{d.sharing.groups.join(', ')}</span> : null}
            {d.can_edit ? (
              <button
                type="button"
                class="link danger"
                aria-label={`Delete ${d.title}`}
                onClick={() => {
                  if (!confirm(`Delete the dashboard "${d.title}"?`)) return;
                  deleteDashboard(d.id).then(list.reload, (e: unknown) => setError(toApiError(e)));
                }}
              >
                delete
              </button>
            ) : null}
          </li>
        ))}
        {list.data && list.data.length === 0 ? <li class="muted">No dashboards yet.</li> : null}
      </ul>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          createDashboard({ title: title || 'New dashboard', description: '', sharing: { everyone: false, groups: [] }, time: { from: 'now-1h', to: null }, refresh: null, panels: [] }).then(
            (d) => navigate(`/dashboards/${d.id}?edit=1`),
            (err: unknown) => setError(toApiError(err)),
          );
        }}
      >
        <label>
          New dashboard
          <input name="title" value={title} placeholder="Title" onInput={(e) => setTitle(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">
          Create
        </button>
      </form>
      <p>
        <label>
          Import JSON{' '}
          <input type="file" name="import" accept=".json,application/json" onChange={(e) => importFile(e.currentTarget.files?.[0])} />
        </label>
      </p>
      {importError ? (
        <p class="field-error" role="alert">
          {importError}
        </p>
      ) : null}
    </main>
  );
}
