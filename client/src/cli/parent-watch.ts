/// <reference types="node" />

/**
 * Notices that the process that started this one is gone, for `run` and `sidecar`: they treat it as
 * a SIGTERM. Why: a process manager's SIGTERM reaches only the process it started. Under
 * `npx leasehold …` (a Dockerfile's `CMD ["npx", …]`, a systemd unit) that is npm, which exits
 * without passing the signal on to leasehold, so leasehold would keep its command running and its
 * lease renewed until someone signals it directly. When a parent exits, the kernel re-parents its
 * children (to PID 1 or the nearest subreaper), so a change of `process.ppid` means it is gone.
 *
 * It polls: Node has no event for it (Linux's PR_SET_PDEATHSIG is not reachable from Node). Each
 * poll is one getppid() system call, every PARENT_POLL_MS; a process manager's stop timeout (10 s
 * for `docker stop`, 30 s for ECS by default) leaves room for that half second.
 */

/** How often the parent is checked, in ms. The delay between the parent's exit and the shutdown is at most this. */
export const PARENT_POLL_MS = 500;

export interface ParentWatchOptions {
  /** Default PARENT_POLL_MS. */
  intervalMs?: number;
  /** Default `process.ppid` (read at each poll). */
  readParentPid?: () => number;
}

/**
 * Calls `onGone(formerParentPid)` once, at the first poll that finds another parent. Returns a
 * function that stops watching. The timer does not keep the process alive. A process started by
 * PID 1 (or that is PID 1, parent 0) cannot be orphaned: nothing is watched.
 */
export function watchParent(onGone: (formerParentPid: number) => void, options: ParentWatchOptions = {}): () => void {
  const readParentPid = options.readParentPid ?? (() => process.ppid);
  const parentPid = readParentPid();
  if (parentPid <= 1) return () => undefined;
  const timer = setInterval(() => {
    if (readParentPid() === parentPid) return;
    clearInterval(timer);
    onGone(parentPid);
  }, options.intervalMs ?? PARENT_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
