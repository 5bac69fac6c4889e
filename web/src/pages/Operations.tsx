// Operations: the node's pipelines with their event rates, queue depths,
// latencies and every component's counters and errors, polled from the
// stats API every 2 s; the browser keeps the last 5 minutes for the charts.
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { Sparkline } from '../components/Sparkline/Sparkline';
import type { ComponentStats, PipelineStats } from '../api/types';
import { ratePerSec, useNodeStats, type StatsSample } from '../hooks/useNodeStats';
import { ago, bytes, compact, exact } from '../lib/format';
import { DataTable } from '../components/DataTable/DataTable';

/** Per-sample series of one pipeline: events in/s, out/s, queue depth. */
export function pipelineSeries(samples: StatsSample[], name: string): { t: number[]; inRate: number[]; outRate: number[]; queue: number[] } {
  const t: number[] = [];
  const inRate: number[] = [];
  const outRate: number[] = [];
  const queue: number[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]?.stats.pipelines[name];
    const s = samples[i];
    const b = s?.stats.pipelines[name];
    if (!a || !b || !s) continue;
    const dt = s.at - (samples[i - 1]?.at ?? s.at);
    t.push(s.at);
    inRate.push(ratePerSec(a.events.in, b.events.in, dt));
    outRate.push(ratePerSec(a.events.out, b.events.out, dt));
    queue.push(b.queue.events);
  }
  return { t, inRate, outRate, queue };
}

/** When a source last handed events in, for its row: "—" for filters and sinks. */
export function lastEvent(kind: string, c: ComponentStats, nowMs: number = Date.now()): string {
  if (kind !== 'source') return '—';
  const t = c.gauges['last_event_timestamp_seconds'];
  return ago(typeof t === 'number' ? t : 0, nowMs);
}

/** The embedded store's figures from the stats' `search` section, or null
 * when the node has none (another backend, or no store). */
export function storeFigures(search: Record<string, number> | undefined): { label: string; value: string }[] | null {
  const g = (k: string): number | undefined => search?.[`sluice_store_${k}`];
  const disk = g('disk_bytes');
  if (disk === undefined) return null;
  return [
    { label: 'on disk', value: bytes(disk) },
    { label: 'events stored', value: exact(g('stored_events') ?? 0) },
    { label: 'partitions', value: exact(g('partitions') ?? 0) },
    { label: 'dropped by retention', value: `${exact(g('retention_events_total') ?? 0)} events in ${exact(g('partitions_dropped_total') ?? 0)} partitions` },
  ];
}

function ComponentRows({ kind, list }: { kind: string; list: ComponentStats[] }) {
  return (
    <>
      {list.map((c) => {
        const extra = Object.entries(c.counters).filter(([, v]) => v > 0);
        return (
          <tr key={`${kind}-${c.id}`} class={c.errors > 0 || c.events.failed > 0 ? 'has-errors' : ''}>
            <td>{kind}</td>
            <th scope="row">{c.id}</th>
            <td>{c.type}</td>
            <td class="num">{compact(c.events.in)}</td>
            <td class="num">{compact(c.events.out)}</td>
            <td class="num">{c.rates['1m'].toFixed(1)}</td>
            <td class="num">{compact(c.events.failed)}</td>
            <td class="num">{compact(c.events.dropped)}</td>
            <td class="num">{compact(c.errors)}</td>
            <td>{lastEvent(kind, c)}</td>
            <td>{extra.map(([k, v]) => `${k}=${v}`).join(', ')}</td>
          </tr>
        );
      })}
    </>
  );
}

function PipelineCard({ name, p, samples }: { name: string; p: PipelineStats; samples: StatsSample[] }) {
  const s = pipelineSeries(samples, name);
  const last = s.inRate.length > 0 ? (s.inRate[s.inRate.length - 1] ?? 0) : p.rates['1m'];
  const lastOut = s.outRate.length > 0 ? (s.outRate[s.outRate.length - 1] ?? 0) : p.rates['1m'];
  return (
    <section class="card pipeline" aria-label={`Pipeline ${name}`} data-pipeline={name}>
      <h2>{name}</h2>
      <dl class="kpis">
        <div>
          <dt>in</dt>
          <dd>{compact(last)}/s</dd>
        </div>
        <div>
          <dt>out</dt>
          <dd>{compact(lastOut)}/s</dd>
        </div>
        <div>
          <dt>events in / out / filtered</dt>
          <dd data-events-in={p.events.in}>
            {compact(p.events.in)} / {compact(p.events.out)} / {compact(p.events.filtered)}
          </dd>
        </div>
        <div>
          <dt>queue ({p.queue.type})</dt>
          <dd>
            {compact(p.queue.events)} events, {bytes(p.queue.bytes)}
          </dd>
        </div>
        <div>
          <dt>batch latency p50 / p99</dt>
          <dd>
            {(p.batch_latency_us.p50 / 1000).toFixed(1)} / {(p.batch_latency_us.p99 / 1000).toFixed(1)} ms
          </dd>
        </div>
      </dl>
      <div class="sparks">
        <figure>
          <figcaption>events in/s</figcaption>
          <Sparkline times={s.t} values={s.inRate} label={`${name}: events in per second`} />
        </figure>
        <figure>
          <figcaption>events out/s</figcaption>
          <Sparkline times={s.t} values={s.outRate} label={`${name}: events out per second`} colourIndex={1} />
        </figure>
        <figure>
          <figcaption>queue depth</figcaption>
          <Sparkline times={s.t} values={s.queue} label={`${name}: queued events`} colourIndex={3} />
        </figure>
      </div>
      <DataTable class="components" columns={['kind', 'id', 'type', 'in', 'out', 'rate 1m', 'failed', 'dropped', 'errors', 'last event', 'counters']}>
        <ComponentRows kind="source" list={p.plugins.sources} />
        <ComponentRows kind="filter" list={p.plugins.filters} />
        <ComponentRows kind="sink" list={p.plugins.sinks} />
      </DataTable>
    </section>
  );
}

/** The store: size on disk, events, partitions, what retention removed
 * (an event older than `retention_age` is dropped with its partition). */
function StoreCard({ search }: { search: Record<string, number> | undefined }) {
  const figures = storeFigures(search);
  if (!figures) return null;
  return (
    <section class="card node" aria-label="Store">
      <h2>Store</h2>
      <dl class="kpis">
        {figures.map((f) => (
          <div key={f.label}>
            <dt>{f.label}</dt>
            <dd>{f.value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

/** The operations page. */
export function OperationsPage() {
  const { samples, error } = useNodeStats(2000);
  const last = samples[samples.length - 1]?.stats;
  const prev = samples[samples.length - 2];
  const cpu = last && prev && samples.length > 1 ? ratePerSec(prev.stats.process.cpu_seconds, last.process.cpu_seconds, (samples[samples.length - 1]?.at ?? 0) - prev.at) * 100 : null;
  return (
    <main id="main" class="ops-page" tabIndex={-1}>
      <ErrorBox error={error} />
      {last ? (
        <>
          <section class="card node" aria-label="Node">
            <h2>
              Node <code>{last.name}</code> <span class="muted">v{last.version}</span>
            </h2>
            <dl class="kpis">
              <div>
                <dt>uptime</dt>
                <dd>{Math.floor(last.uptime_ms / 60000)} min</dd>
              </div>
              <div>
                <dt>memory (RSS)</dt>
                <dd>{bytes(last.process.rss_bytes)}</dd>
              </div>
              <div>
                <dt>CPU</dt>
                <dd>{cpu === null ? '—' : `${cpu.toFixed(0)} %`}</dd>
              </div>
              <div>
                <dt>threads / open files</dt>
                <dd>
                  {last.process.threads} / {last.process.open_files}
                </dd>
              </div>
            </dl>
          </section>
          <StoreCard search={last.search} />
          {Object.entries(last.pipelines).map(([name, p]) => (
            <PipelineCard key={name} name={name} p={p} samples={samples} />
          ))}
        </>
      ) : !error ? (
        <p class="muted">Loading…</p>
      ) : null}
    </main>
  );
}
