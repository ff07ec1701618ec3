/** How the bench report writes numbers and tables (markdown). */

export function fmtMs(value: number): string {
  if (!Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs < 10) return value.toFixed(2);
  if (abs < 100) return value.toFixed(1);
  return Math.round(value).toLocaleString('en-US');
}

export function fmtInt(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

export function fmtRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : '–';
}

export function fmtUsd(value: number): string {
  if (!Number.isFinite(value)) return '–';
  return value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

export function table(header: string[], rows: string[][], align?: Array<'l' | 'r'>): string[] {
  const sep = header.map((_, i) => ((align?.[i] ?? 'r') === 'l' ? '---' : '---:'));
  return [`| ${header.join(' | ')} |`, `| ${sep.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}
