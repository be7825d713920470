/** Small hand-written SVG line charts (no dependency): one x axis, one or two y axes. */

export interface Series {
  label: string;
  color: string;
  points: { x: number; y: number }[];
  /** 'left' (default) or 'right' y axis. */
  axis?: 'left' | 'right';
  unit: string;
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  /** Log scale (base 2) for x, e.g. concurrency 8 … 256. */
  xLog?: boolean;
  width?: number;
  height?: number;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function format(value: number): string {
  if (Number.isInteger(value)) return String(value);
  if (value >= 1000) return `${Math.round(value)}`;
  if (value >= 10) return value.toFixed(0);
  if (value >= 1) return value.toFixed(1);
  return value.toFixed(2);
}

export function lineChart(series: Series[], options: ChartOptions): string {
  const width = options.width ?? 720;
  const height = options.height ?? 400;
  const margin = { top: 40, right: 80, bottom: 70, left: 80 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p.x);
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const tx = (x: number) => {
    if (xMax === xMin) return margin.left + plotW / 2;
    const f = options.xLog ? (Math.log2(x) - Math.log2(xMin)) / (Math.log2(xMax) - Math.log2(xMin)) : (x - xMin) / (xMax - xMin);
    return margin.left + f * plotW;
  };
  const axes: Record<'left' | 'right', { max: number; unit: string; color: string }> = {
    left: { max: 1, unit: '', color: '#333' },
    right: { max: 1, unit: '', color: '#333' },
  };
  for (const side of ['left', 'right'] as const) {
    const onSide = series.filter((s) => (s.axis ?? 'left') === side);
    if (onSide.length === 0) continue;
    axes[side].max = niceMax(Math.max(...onSide.flatMap((s) => s.points.map((p) => p.y)).filter(Number.isFinite)));
    axes[side].unit = onSide.map((s) => s.unit).filter((u, i, a) => a.indexOf(u) === i).join(', ');
    axes[side].color = onSide.length === 1 ? onSide[0]!.color : '#333';
  }
  const ty = (y: number, side: 'left' | 'right') => margin.top + plotH - (Math.min(y, axes[side].max) / axes[side].max) * plotH;

  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  parts.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escape(options.title)}</text>`);
  // Grid and y ticks.
  for (let i = 0; i <= 5; i++) {
    const y = margin.top + plotH - (i / 5) * plotH;
    parts.push(`<line x1="${margin.left}" y1="${y}" x2="${margin.left + plotW}" y2="${y}" stroke="#ddd"/>`);
    parts.push(`<text x="${margin.left - 6}" y="${y + 4}" text-anchor="end" fill="${axes.left.color}">${format((axes.left.max * i) / 5)}</text>`);
    if (series.some((s) => s.axis === 'right')) {
      parts.push(`<text x="${margin.left + plotW + 6}" y="${y + 4}" fill="${axes.right.color}">${format((axes.right.max * i) / 5)}</text>`);
    }
  }
  // X ticks: on a log axis at the data's x values (at most 12), else at round steps.
  let ticks: number[];
  if (options.xLog) {
    const distinct = [...new Set(xs)].sort((a, b) => a - b);
    const every = Math.ceil(distinct.length / 12);
    ticks = distinct.filter((_, index) => index % every === 0);
  } else {
    const step = niceMax((xMax - xMin) / 8 || 1);
    ticks = [];
    for (let x = Math.ceil(xMin / step) * step; x <= xMax + 1e-9; x += step) ticks.push(Number(x.toPrecision(12)));
  }
  ticks.forEach((x) => {
    parts.push(`<line x1="${tx(x)}" y1="${margin.top + plotH}" x2="${tx(x)}" y2="${margin.top + plotH + 5}" stroke="#333"/>`);
    parts.push(`<text x="${tx(x)}" y="${margin.top + plotH + 18}" text-anchor="middle">${format(x)}</text>`);
  });
  parts.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`);
  parts.push(`<text x="${margin.left + plotW / 2}" y="${height - 34}" text-anchor="middle">${escape(options.xLabel)}</text>`);
  parts.push(
    `<text transform="translate(18 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle" fill="${axes.left.color}">${escape(axes.left.unit)}</text>`,
  );
  if (series.some((s) => s.axis === 'right')) {
    parts.push(
      `<text transform="translate(${width - 14} ${margin.top + plotH / 2}) rotate(90)" text-anchor="middle" fill="${axes.right.color}">${escape(axes.right.unit)}</text>`,
    );
  }
  // Lines.
  for (const s of series) {
    const side = s.axis ?? 'left';
    const points = s.points.filter((p) => Number.isFinite(p.y)).sort((a, b) => a.x - b.x);
    if (points.length === 0) continue;
    const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${tx(p.x).toFixed(1)},${ty(p.y, side).toFixed(1)}`).join(' ');
    parts.push(`<path d="${path}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    if (points.length <= 24) {
      for (const p of points) parts.push(`<circle cx="${tx(p.x).toFixed(1)}" cy="${ty(p.y, side).toFixed(1)}" r="3.5" fill="${s.color}"/>`);
    }
  }
  // Legend.
  series.forEach((s, index) => {
    const x = margin.left + index * 200;
    const y = height - 12;
    parts.push(`<line x1="${x}" y1="${y - 4}" x2="${x + 20}" y2="${y - 4}" stroke="${s.color}" stroke-width="3"/>`);
    parts.push(`<text x="${x + 26}" y="${y}">${escape(s.label)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
