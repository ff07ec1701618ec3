// Types of lease-rows.js, a plain ES module the browser loads as is (the page has no build step).
import type { JsonValue, PublicLease } from '../../client/src/protocol/index.js';

export interface RowCells {
  name: string;
  holder: { text: string; none: boolean };
  token: string;
  transitions: string;
  metadata: { text: string; title: string; none: boolean };
  change: { text: string; title: string };
  time: { value: number; max: number; low: boolean; text: string; valueText: string; label: string };
}

export declare function orderLeases(leases: readonly PublicLease[]): PublicLease[];
export declare function serverNowMs(leases: readonly PublicLease[], fallbackMs: number): number;
export declare function lastChangeAt(lease: PublicLease): number;
export declare function formatDuration(ms: number): string;
export declare function formatAgo(ms: number): string;
export declare function timeLeft(leftMs: number, maxMs: number): Pick<RowCells['time'], 'value' | 'max' | 'low' | 'text'>;
export declare function memberLoadText(metadata: JsonValue | null | undefined): string | undefined;
export declare function metadataCell(metadata: JsonValue | null | undefined): RowCells['metadata'];
export declare function rowCells(lease: PublicLease, nowMs: number, remainingMs?: number): RowCells;
export declare function statusText(count: number, prefix: string, watch: 'connecting' | 'live' | 'down'): string;
