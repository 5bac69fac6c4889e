import { describe, expect, it } from 'vitest';
import type { NodeStats, PipelineStats } from '../api/types';
import type { StatsSample } from '../hooks/useNodeStats';
import { pipelineSeries } from './Operations';

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
});
