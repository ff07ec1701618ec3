// Types of semaphore-rows.js, a plain ES module the browser loads as is (the page has no build step).
import type { PermitHolder, PublicSemaphore } from '../../client/src/protocol/index.js';
import type { RowCells } from './lease-rows.js';

export interface HolderCells {
  holder: string;
  token: string;
  metadata: RowCells['metadata'];
  time: RowCells['time'];
}

export declare const SEMAPHORE_NAME_PATTERN: RegExp;
export declare const SEMAPHORES_PARAM: 'semaphores';
export declare const MAX_WATCHED_SEMAPHORES: number;
export declare function parseSemaphoreNames(param: string | null | undefined): string[];
export declare function formatSemaphoreNames(names: readonly string[]): string;
export declare function refuseSemaphoreName(name: string, watched: readonly string[]): string | undefined;
export declare function countText(semaphore: PublicSemaphore | null): string;
export declare function holderCells(name: string, holder: PermitHolder, leftMs: number, scaleMs: number): HolderCells;
