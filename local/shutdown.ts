/**
 * How `npm start` stops, however it is asked to.
 *
 * The process tree is npm → node (this process) → java (DynamoDB Local); the `start` script execs
 * node so that no shell sits in between (dash neither execs nor forwards signals, so a SIGTERM to
 * npm used to reach only npm and its shell). Each way of stopping ends in the same `stop`:
 * - SIGTERM or SIGINT to this process, forwarded by npm when npm gets them (npm forwards both to
 *   its script), or sent to the whole process group by a terminal's Ctrl-C;
 * - SIGHUP, when the terminal goes away;
 * - the parent's death (npm killed with SIGKILL, or a crashed process manager): a signal-free
 *   event, seen as this process being re-parented, so `process.ppid` is polled. Java watches its
 *   own stdin for the same reason (see dynamodb/LoopbackDynamoDBLocal.java).
 * A stop that has not finished after `graceMs` forces the exit: `force` runs (it kills what is left
 * without waiting) and the process exits with code 1. A second signal does not force it: Ctrl-C
 * in a terminal reaches this process twice (from the terminal to the group, and forwarded by npm).
 */
export interface StopWatchOptions {
  /** The orderly stop; the process exits with code 0 once it resolves. */
  stop: (reason: string) => Promise<void>;
  /** Kills whatever `stop` has not stopped yet, synchronously. Also runs on any other exit. */
  force: () => void;
  /** How long an orderly stop may take before `force`. Default 4000 ms (inside a 5 s budget). */
  graceMs?: number;
  /** How often to look for a new parent. Default 250 ms. */
  parentPollMs?: number;
  /** Report what is happening (default: stderr). */
  log?: (line: string) => void;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Installs the signal handlers and the parent watch; returns a function that removes them. */
export function stopWhenAsked(options: StopWatchOptions): () => void {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const graceMs = options.graceMs ?? 4_000;
  let stopping = false;
  let forced = false;
  const force = () => {
    if (forced) return;
    forced = true;
    options.force();
  };

  const forceExit = (why: string) => {
    log(`leasehold: ${why}; killing what is left`);
    force();
    process.exit(1);
  };

  const begin = (reason: string) => {
    if (stopping) return;
    stopping = true;
    log(`leasehold: ${reason}: stopping the server and DynamoDB Local`);
    setTimeout(() => forceExit(`still stopping after ${graceMs} ms`), graceMs).unref();
    options.stop(reason).then(
      () => process.exit(0),
      (error: unknown) => forceExit(`stop failed (${error instanceof Error ? error.message : String(error)})`),
    );
  };

  const onSignal = (signal: NodeJS.Signals) => begin(signal);
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  // A process started by PID 1 (a container's entrypoint) has no parent to lose.
  const parentPid = process.ppid;
  const parentWatch =
    parentPid > 1
      ? setInterval(() => {
          if (!stopping && process.ppid !== parentPid) begin(`parent process ${parentPid} exited`);
        }, options.parentPollMs ?? 250)
      : undefined;
  parentWatch?.unref();

  // Whatever ends the process (an uncaught error included) must not leave Java behind.
  process.on('exit', force);

  return () => {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    if (parentWatch) clearInterval(parentWatch);
    process.off('exit', force);
  };
}
