// Types of rwlock-rows.js, a plain ES module the browser loads as is (the page has no build step).
import type { PublicRwlock, RwlockHolder, RwlockMode } from '../../client/src/protocol/index.js';
import type { RowCells } from './lease-rows.js';

export type RwlockPhase = RwlockMode | 'free' | 'unused';

export interface GrantCells {
  holder: string;
  mode: RwlockMode;
  token: string;
  time: RowCells['time'];
}

export interface WaitingCells {
  holder: string;
  waited: { text: string; title: string };
  lapses: { text: string; title: string };
  readersEnd: { text: string; title: string } | undefined;
}

export declare const RWLOCK_NAME_PATTERN: RegExp;
export declare const RWLOCKS_PARAM: 'rwlocks';
export declare const MAX_WATCHED_RWLOCKS: number;
export declare function parseRwlockNames(param: string | null | undefined): string[];
export declare function formatRwlockNames(names: readonly string[]): string;
export declare function refuseRwlockName(name: string, watched: readonly string[]): string | undefined;
export declare function phaseOf(rwlock: PublicRwlock | null): RwlockPhase;
export declare function phaseText(rwlock: PublicRwlock | null): string;
export declare function grantKeys(holders: readonly RwlockHolder[]): string[];
export declare function grantCells(name: string, grant: RwlockHolder, leftMs: number): GrantCells;
export declare function waitingCells(rwlock: PublicRwlock | null, nowMs: number): WaitingCells | undefined;
export declare function refreshText(watch: 'connecting' | 'live' | 'down' | undefined): string;
