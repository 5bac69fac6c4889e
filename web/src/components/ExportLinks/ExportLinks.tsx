// "Export CSV · ndjson" on the search page: links to GET /api/v1/export for
// the search on screen (CSV with its columns). Signed in with a session the
// browser downloads the streamed answer itself (the cookie goes along);
// signed in with a bearer token, which a link cannot carry, the file is
// fetched with it and handed to the browser as a blob.
import { useState } from 'preact/hooks';
import { authHeaders, credentials, errorOf, type ApiError } from '../../api/client';
import { EXPORT_LIMIT, exportUrl, type ExportRequest } from '../../api/search';
import { toApiError } from '../../hooks/useRequest';
import { ErrorBox } from '../ErrorBox/ErrorBox';

/** Props of [`ExportLinks`]. */
export interface ExportLinksProps {
  search: Omit<ExportRequest, 'format'>;
  /** Hits of the search, to say when the export stops at the limit. */
  total: number | null;
}

async function fetchDownload(url: string, name: string): Promise<void> {
  const r = await fetch(url, { headers: authHeaders('GET'), credentials: 'same-origin' });
  if (!r.ok) throw await errorOf(r);
  const href = URL.createObjectURL(await r.blob());
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 60_000);
}

/** The export links. */
export function ExportLinks({ search, total }: ExportLinksProps) {
  const [err, setErr] = useState<ApiError | null>(null);
  const link = (format: ExportRequest['format'], label: string) => {
    const href = exportUrl({ ...search, format });
    const name = `sluice-export.${format}`;
    const onClick = (e: MouseEvent): void => {
      setErr(null);
      if (credentials()?.kind !== 'token') return;
      e.preventDefault();
      fetchDownload(href, name).catch((x: unknown) => setErr(toApiError(x)));
    };
    return (
      <a class={`export-${format}`} href={href} download={name} onClick={onClick}>
        {label}
      </a>
    );
  };
  return (
    <span class="export-links">
      Export {link('csv', 'CSV')} · {link('ndjson', 'ndjson')}
      {total !== null && total > EXPORT_LIMIT ? <span class="muted"> (the newest {EXPORT_LIMIT.toLocaleString('en')})</span> : null}
      <ErrorBox error={err} />
    </span>
  );
}
