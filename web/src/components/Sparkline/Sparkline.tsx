// A small line chart of recent values (operations page).
import type { Options } from 'uplot';
import { Chart, colour } from '../Chart/Chart';

/** Props of [`Sparkline`]. */
export interface SparklineProps {
  /** Epoch ms of each point. */
  times: number[];
  values: number[];
  label: string;
  colourIndex?: number;
  height?: number;
}

/** The sparkline. */
export function Sparkline({ times, values, label, colourIndex = 0, height = 60 }: SparklineProps) {
  const options = (width: number, h: number): Options => ({
    width,
    height: h,
    ms: 1,
    legend: { show: false },
    cursor: { show: false },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [{ show: false }, { size: 40, stroke: '#6b7280', ticks: { show: false }, font: '10px sans-serif' }],
    series: [{}, { stroke: colour(colourIndex), fill: `${colour(colourIndex)}22`, width: 1.5, points: { show: false } }],
  });
  return <Chart options={options} optionsKey={`spark-${colourIndex}`} data={[times, values]} height={height} label={label} />;
}
