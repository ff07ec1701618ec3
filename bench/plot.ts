import { fmtMs, fmtInt } from './format.js';
import { percentile } from './stats.js';
import { escapeXml } from '../scripts/xml.js';

/** The failover plot (SVG): one box plot with every kill as a dot, per system, failover above its floor. */

export interface SvgSeries {
  label: string;
  failover: number[];
  floor: number[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];

function niceStep(range: number): number {
  const raw = range / 8;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * pow) return m * pow;
  return 10 * pow;
}

export function failoverSvg(series: readonly SvgSeries[], title: string): string {
  // Room for the longest row label ("<label>: failover") at about 7 px per character.
  const longestLabel = Math.max(0, ...series.map((s) => s.label.length + ': failover'.length));
  const left = Math.max(190, 16 + Math.ceil(longestLabel * 7));
  const width = 670 + left;
  const right = 30;
  const top = 50;
  const rowHeight = 34;
  const groupGap = 18;
  const plotted = series.filter((s) => s.failover.length > 0);
  const all = plotted.flatMap((s) => [...s.failover, ...s.floor]).filter(Number.isFinite);
  const maxValue = all.length > 0 ? Math.max(...all) : 1;
  const step = niceStep(maxValue);
  const xMax = Math.ceil((maxValue * 1.02) / step) * step || step;
  const x = (v: number) => left + (Math.max(0, v) / xMax) * (width - left - right);
  const plotHeight = plotted.length * (2 * rowHeight + groupGap);
  const height = top + plotHeight + 60;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  );
  // grid and axis
  for (let v = 0; v <= xMax + 1e-9; v += step) {
    const gx = x(v).toFixed(1);
    out.push(
      `<line x1="${gx}" y1="${top - 8}" x2="${gx}" y2="${top + plotHeight}" stroke="#e0e0e0"/>`,
      `<text x="${gx}" y="${top + plotHeight + 16}" text-anchor="middle" fill="#333">${fmtInt(v)}</text>`,
    );
  }
  out.push(
    `<text x="${(left + width - right) / 2}" y="${top + plotHeight + 38}" text-anchor="middle" fill="#333">milliseconds from kill -9 of the leader</text>`,
  );
  plotted.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] as string;
    const groupTop = top + i * (2 * rowHeight + groupGap);
    const rows: Array<{ name: string; values: number[]; fill: string; stroke: string }> = [
      { name: `${s.label}: failover`, values: s.failover, fill: color, stroke: color },
      { name: `${s.label}: floor`, values: s.floor, fill: '#9e9e9e', stroke: '#616161' },
    ];
    rows.forEach((row, j) => {
      const cy = groupTop + j * rowHeight + rowHeight / 2;
      const values = row.values.filter(Number.isFinite);
      out.push(`<text x="${left - 10}" y="${(cy + 4).toFixed(1)}" text-anchor="end" fill="#222">${escapeXml(row.name)}</text>`);
      if (values.length === 0) return;
      const q1 = percentile(values, 25);
      const q2 = percentile(values, 50);
      const q3 = percentile(values, 75);
      const lo = Math.min(...values);
      const hi = Math.max(...values);
      const h = rowHeight * 0.55;
      out.push(
        `<line x1="${x(lo).toFixed(1)}" y1="${cy.toFixed(1)}" x2="${x(hi).toFixed(1)}" y2="${cy.toFixed(1)}" stroke="${row.stroke}"/>`,
        `<rect x="${x(q1).toFixed(1)}" y="${(cy - h / 2).toFixed(1)}" width="${Math.max(1, x(q3) - x(q1)).toFixed(1)}" height="${h.toFixed(1)}" fill="${row.fill}" fill-opacity="0.25" stroke="${row.stroke}"/>`,
        `<line x1="${x(q2).toFixed(1)}" y1="${(cy - h / 2).toFixed(1)}" x2="${x(q2).toFixed(1)}" y2="${(cy + h / 2).toFixed(1)}" stroke="${row.stroke}" stroke-width="2.5"/>`,
      );
      values.forEach((v, k) => {
        // deterministic vertical spread so that dots do not hide each other
        const dy = ((k * 37) % 11) / 10 - 0.5;
        out.push(`<circle cx="${x(v).toFixed(1)}" cy="${(cy + dy * h * 0.8).toFixed(1)}" r="2.2" fill="${row.fill}" fill-opacity="0.7"/>`);
      });
      out.push(`<text x="${(x(q2) + 4).toFixed(1)}" y="${(cy - h / 2 - 2).toFixed(1)}" fill="${row.stroke}" font-size="10">p50 ${fmtMs(q2)}</text>`);
    });
  });
  out.push(
    `<text x="${left}" y="${height - 6}" fill="#555" font-size="10">Box: p25–p75, thick line: p50, whisker: min–max, dots: one per kill. Floor: lease time left at the kill.</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
