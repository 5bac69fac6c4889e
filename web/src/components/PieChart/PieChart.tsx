// A pie (donut) of labelled counts, drawn as SVG arcs — uPlot has no pies and
// a pie is a few paths, not worth a second chart library (ADR 0025).
import { compact } from '../../lib/format';
import { colour } from '../Chart/Chart';

/** One slice. */
export interface Slice {
  label: string;
  value: number;
}

/** Props of [`PieChart`]. */
export interface PieChartProps {
  slices: Slice[];
  size?: number;
  /** A click on a slice or its legend entry (drill-down). */
  onPick?: ((i: number) => void) | undefined;
}

/** The SVG path of a donut slice between two angles (radians, 0 = 12 o'clock). */
export function arcPath(cx: number, cy: number, r: number, inner: number, a0: number, a1: number): string {
  // A full circle cannot be one arc: split it in two.
  if (a1 - a0 >= 2 * Math.PI - 1e-9) {
    return `${arcPath(cx, cy, r, inner, a0, a0 + Math.PI)} ${arcPath(cx, cy, r, inner, a0 + Math.PI, a1)}`;
  }
  const p = (rad: number, a: number): string => `${(cx + rad * Math.sin(a)).toFixed(2)} ${(cy - rad * Math.cos(a)).toFixed(2)}`;
  const large = a1 - a0 > Math.PI ? 1 : 0;
  return `M ${p(r, a0)} A ${r} ${r} 0 ${large} 1 ${p(r, a1)} L ${p(inner, a1)} A ${inner} ${inner} 0 ${large} 0 ${p(inner, a0)} Z`;
}

/** The pie chart with its legend. */
export function PieChart({ slices, size = 160, onPick }: PieChartProps) {
  const total = slices.reduce((n, s) => n + s.value, 0);
  const r = size / 2;
  let a = 0;
  if (total === 0) return <p class="no-data pie-empty">No data</p>;
  return (
    <div class="pie">
      <svg width={size} height={size} viewBox={`0 0 ${size} ${size}`} role="img" aria-label={`Pie of ${slices.length} values, ${total} in all`}>
        {total > 0
          ? slices.map((s, i) => {
              const a0 = a;
              a += (s.value / total) * 2 * Math.PI;
              return (
                <path key={s.label} d={arcPath(r, r, r - 2, r * 0.55, a0, a)} fill={colour(i)} onClick={onPick ? () => onPick(i) : undefined} class={onPick ? 'pickable' : undefined}>
                  <title>{`${s.label}: ${s.value}`}</title>
                </path>
              );
            })
          : null}
      </svg>
      <ul class="legend">
        {slices.map((s, i) => (
          <li key={s.label}>
            <span class="swatch" style={{ background: colour(i) }} />{' '}
            {onPick ? (
              <button type="button" class="link drill" onClick={() => onPick(i)}>
                {s.label}
              </button>
            ) : (
              s.label
            )}{' '}
            <span class="n">{compact(s.value)}</span>
            <span class="muted"> ({total ? Math.round((s.value / total) * 100) : 0}%)</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
