import { describe, expect, it } from 'vitest';
import type { NodeStats, PipelineStats } from '../api/types';
import type { StatsSample } from '../hooks/useNodeStats';
import { lastEvent, pipelineSeries, storeFigures } from './Operations';
import type { ComponentStats } from '../api/types';

function sample(at: number, eventsIn: number, eventsOut: number, queued: number): StatsSample {
  const p = { events: { in: eventsIn, out: eventsOut, filtered: 0 }, queue: { type: 'memory', events: queued, bytes: 0 } } as unknown as PipelineStats;
  return { at, stats: { pipelines: { main: p } } as unknown as NodeStats };
}

describe('operations series', () => {
  it('derives per-second rates from counter deltas and keeps queue depths', () => {
    const s = pipelineSeries([sample(0, 0, 0, 5), sample(2000, 200, 100, 7), sample(4000, 200, 300, 0)], 'main');
    expect(s).toEqual({ t: [2000, 4000], inRate: [100, 0], outRate: [50, 100], queue: [7, 0] });
    expect(pipelineSeries([sample(0, 1, 1, 1)], 'main').t).toEqual([]);
    expect(pipelineSeries([sample(0, 1, 1, 1), sample(1, 2, 2, 2)], 'other').t).toEqual([]);
  });
  it('shows the store figures and retention drops, and nothing for another backend', () => {
    expect(
      storeFigures({
        sluice_store_disk_bytes: 3 * 1024 * 1024,
        sluice_store_stored_events: 123456,
        sluice_store_partitions: 4,
        sluice_store_retention_events_total: 1000,
        sluice_store_partitions_dropped_total: 2,
      }),
    ).toEqual([
      { label: 'on disk', value: '3.0 MiB' },
      { label: 'events stored', value: '123,456' },
      { label: 'partitions', value: '4' },
      { label: 'dropped by retention', value: '1,000 events in 2 partitions' },
    ]);
    expect(storeFigures({ sluice_opensearch_requests_total: 5 })).toBeNull();
    expect(storeFigures(undefined)).toBeNull();
  });

  it("says when a source last emitted, and nothing for sinks", () => {
    const c = { gauges: { last_event_timestamp_seconds: 1_700_000_000 } } as unknown as ComponentStats;
    expect(lastEvent('source', c, 1_700_000_042_000)).toBe('42 s ago');
    expect(lastEvent('source', { gauges: {} } as unknown as ComponentStats)).toBe('never');
    expect(lastEvent('sink', c)).toBe('—');
  });
});
