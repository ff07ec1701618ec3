import { vi } from 'vitest';

/**
 * Everything the process prints from now until `vi.restoreAllMocks()`: stdout, stderr and the console
 * methods Powertools' loggers call, each write one entry. The functions' log tests read it to prove
 * what reaches a log line (and what never does).
 */
export function captureOutput(): string[] {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture as never);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture as never);
  for (const method of ['log', 'info', 'debug', 'warn', 'error'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(' ')));
  }
  return lines;
}
