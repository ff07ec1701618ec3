import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RwlockClient } from '../../client/src/rwlock/rwlock.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { killAllClis, scratch, startCli, waitFor, waitForStderr } from './support.js';

/**
 * `leasehold run --shared NAME` and `--exclusive NAME` as real processes against the local server:
 * the CLI, its supervisor and the command (a shell loop that logs its start with the grant's
 * environment, and ends when the test creates its stop file). Real time: a 15 s ttl where the test
 * waits on its own steps, 6 s where it waits for a reader's grant to run out.
 */

let server: TestServer;
let seq = 0;
const scratches: Array<ReturnType<typeof scratch>> = [];

beforeAll(async () => {
  // With the watch: a push budget this machine's load cannot exhaust, so the release's push is sent.
  server = await startTestServer({ semaphores: true, watch: { pushBudgetMs: 5_000 } });
});
afterEach(async () => {
  await killAllClis();
  for (const s of scratches.splice(0)) s.remove();
});
afterAll(async () => {
  await server.close();
});

function unique(label: string): string {
  seq += 1;
  return `run-rw:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function newScratch() {
  const s = scratch();
  scratches.push(s);
  return s;
}

/**
 * A command that appends "start <label> <pid> <token> <mode> <name>" to the log, works until
 * `stopFile` exists, then appends "end <label>" and exits 0. On SIGTERM it appends "stop <label>".
 */
function job(log: string, label: string, stopFile: string): string[] {
  return [
    'sh',
    '-c',
    `trap 'echo "stop ${label}" >> ${log}; exit 0' TERM; echo "start ${label} $$ $LEASEHOLD_TOKEN $LEASEHOLD_MODE $LEASEHOLD_NAME" >> ${log}; ` +
      `while [ ! -e ${stopFile} ]; do sleep 0.05; done; echo "end ${label}" >> ${log}`,
  ];
}

function run(mode: 'shared' | 'exclusive', name: string, holder: string, command: string[], ttl: string, extra: readonly string[] = []) {
  return startCli(['run', `--${mode}`, name, '--ttl', ttl, '--holder', holder, '--endpoint', server.url, ...extra, '--', ...command]);
}

/** Where the test waits on its own steps, a long ttl keeps every grant through a loaded machine's slow starts; followers ask twice a second. */
const STEADY = ['15s', ['--retry-every', '500ms']] as const;

/** The start line of `label`: its token, mode and name. */
function started(lines: string[], label: string): { token: number; mode: string; name: string } | undefined {
  const line = lines.find((l) => l.startsWith(`start ${label} `));
  if (line === undefined) return undefined;
  const [, , , token, mode, name] = line.split(' ');
  return { token: Number(token), mode: mode as string, name: name as string };
}

describe('leasehold run --shared / --exclusive', { timeout: 90_000 }, () => {
  it('two --shared runs overlap with the same LEASEHOLD_TOKEN; an --exclusive run waits for both, keeps a later reader out, and runs alone with a larger token', async () => {
    const name = unique('phases');
    const s = newScratch();
    const readersDone = join(s.dir, 'readers-done');
    const writerDone = join(s.dir, 'writer-done');
    const lateDone = join(s.dir, 'late-done');
    const a = run('shared', name, 'reader-a', job(s.log, 'A', readersDone), ...STEADY);
    const b = run('shared', name, 'reader-b', job(s.log, 'B', readersDone), ...STEADY);
    const [startA, startB] = await waitFor('both readers to start', () => {
      const lines = s.lines();
      const both = [started(lines, 'A'), started(lines, 'B')];
      return both.every((x) => x !== undefined) ? both : undefined;
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; A said:\n${a.stderr()}\nB said:\n${b.stderr()}`);
    });
    // Both commands are running at once: neither has ended, and both carry the phase's one token.
    expect(s.lines().filter((l) => !l.startsWith('start '))).toEqual([]);
    expect(startA).toEqual({ token: startB?.token, mode: 'shared', name });

    const w = run('exclusive', name, 'writer-w', job(s.log, 'W', writerDone), ...STEADY);
    await waitForStderr(w, 'this run is its waiting writer');
    const late = run('shared', name, 'reader-late', job(s.log, 'L', lateDone), ...STEADY);
    await waitForStderr(late, 'is reserved for the waiting writer writer-w');
    expect(started(s.lines(), 'W')).toBeUndefined();

    writeFileSync(readersDone, '');
    const startW = await waitFor('the writer to start', () => started(s.lines(), 'W'));
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(await b.exited).toEqual({ code: 0, signal: null });
    const lines = s.lines();
    const writerAt = lines.findIndex((l) => l.startsWith('start W '));
    expect(lines.indexOf('end A')).toBeLessThan(writerAt);
    expect(lines.indexOf('end B')).toBeLessThan(writerAt);
    expect(startW.mode).toBe('exclusive');
    expect(startW.token).toBeGreaterThan(startA?.token as number);
    expect(started(lines, 'L')).toBeUndefined(); // the late reader waits for the writer, not beside it

    writeFileSync(writerDone, '');
    const startL = await waitFor('the late reader to start', () => started(s.lines(), 'L'));
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(s.lines().indexOf('end W')).toBeLessThan(s.lines().findIndex((l) => l.startsWith('start L ')));
    expect(startL.mode).toBe('shared');
    expect(startL.token).toBeGreaterThan(startW.token);
    writeFileSync(lateDone, '');
    expect(await late.exited).toEqual({ code: 0, signal: null });
  });

  it('a --shared run whose command keeps working is stopped (exit 4) once a writer waits, before the writer’s command starts', async () => {
    const name = unique('drain');
    const s = newScratch();
    const never = join(s.dir, 'never');
    const writerDone = join(s.dir, 'writer-done');
    const r = run('shared', name, 'reader-r', job(s.log, 'R', never), '6s');
    const startR = await waitFor('the reader to start', () => started(s.lines(), 'R'));

    const w = run('exclusive', name, 'writer-w', job(s.log, 'W', writerDone), '6s', ['--retry-every', '500ms']);
    await waitForStderr(r, `a writer is waiting for ${name}: this shared grant is no longer extended`);
    expect(await r.exited).toEqual({ code: 4, signal: null });
    const startW = await waitFor('the writer to start', () => started(s.lines(), 'W'));

    const lines = s.lines();
    expect(lines.indexOf('stop R')).toBeGreaterThan(-1);
    expect(lines.indexOf('stop R')).toBeLessThan(lines.findIndex((l) => l.startsWith('start W ')));
    expect(startW.token).toBeGreaterThan(startR.token);
    expect(r.stderr()).toContain(`lost the shared grant of ${name}`);
    writeFileSync(writerDone, '');
    expect(await w.exited).toEqual({ code: 0, signal: null });
  });

  it('a --shared run told a writer waits hears when the writer’s wait lapses, and its grant is extended again: the command keeps running', async () => {
    const name = unique('lapse');
    const s = newScratch();
    const readerDone = join(s.dir, 'reader-done');
    // 30 s with a 1 s grace: renewals every 10 s, and the local deadline of an unextended grant at
    // least 17 s after the renewal that heard of the writer, past the next renewal (10 s later).
    const r = run('shared', name, 'reader-r', job(s.log, 'R', readerDone), '30s', ['--grace', '1s']);
    await waitFor('the reader to start', () => started(s.lines(), 'R'));

    // A writer that asks until the reader has heard of it, then gives up: its 2 s wait lapses.
    const writer = new RwlockClient({ endpoint: server.url, retry: { retries: 0 } });
    await waitFor('the reader to hear of the writer', async () => {
      if (r.stderr().includes(`a writer is waiting for ${name}`)) return true;
      expect((await writer.acquire(name, { holder: 'writer-w', ttlMs: 2_000, mode: 'exclusive' })).acquired).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 500));
      return false;
    });

    await waitForStderr(r, `no writer waits for ${name} any more (its wait lapsed): this shared grant is extended again`);
    expect(s.lines().filter((l) => !l.startsWith('start '))).toEqual([]); // still working, never stopped
    writeFileSync(readerDone, '');
    expect(await r.exited).toEqual({ code: 0, signal: null });
  });

  it('with --watch, a waiting --exclusive run is woken by the last reader’s release, not at its next scheduled ask', async () => {
    const name = unique('watch');
    const s = newScratch();
    const readersDone = join(s.dir, 'readers-done');
    const writerDone = join(s.dir, 'writer-done');
    const watchUrl = `${server.url.replace('http://', 'ws://')}/v1/watch`;
    // 60 s grants: the server schedules the waiting writer's asks 20 s apart (a third of its wait
    // bound), and --retry-every 1h does not bring them closer.
    const r = run('shared', name, 'reader-r', job(s.log, 'R', readersDone), '60s');
    await waitFor('the reader to start', () => started(s.lines(), 'R'));
    const w = run('exclusive', name, 'writer-w', job(s.log, 'W', writerDone), '60s', ['--retry-every', '1h', '--watch', watchUrl]);
    await waitForStderr(w, 'this run is its waiting writer');

    writeFileSync(readersDone, '');
    expect(await r.exited).toEqual({ code: 0, signal: null });
    // The writer's next scheduled ask is 20 s after its first; 12 s from the release covers the push,
    // the acquire and a command start on a loaded machine, and is still 8 s short of that ask.
    const startW = await waitFor('the writer to start', () => started(s.lines(), 'W'), 12_000);
    expect(startW.mode).toBe('exclusive');
    writeFileSync(writerDone, '');
    expect(await w.exited).toEqual({ code: 0, signal: null });
  });
});
