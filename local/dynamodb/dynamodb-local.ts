import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

/**
 * Runs the real DynamoDB Local emulator (the Java one from AWS) on 127.0.0.1.
 *
 * The emulator ships inside the npm package `amplify-dynamodb-simulator`, so nothing is downloaded
 * at run time. We start it through `LoopbackDynamoDBLocal.java`, which pins the listener to
 * loopback and exits when this process goes away. The launcher is compiled once with `javac` into
 * `node_modules/.cache/leasehold/` (Java's source launcher would recompile it on every start, ~3 s).
 */
export interface DynamoDBLocalOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Persist tables in this folder instead of memory. */
  dataDir?: string;
  /** Forward the emulator's output to this process's stderr. Default false. */
  verbose?: boolean;
  /** Exit when this process exits (stdin watchdog). Default true. */
  exitWithParent?: boolean;
  /**
   * How long to wait for the first answer. Default 60000: a JVM start is a few seconds on an idle
   * machine, but restarts under the chaos harness's load were seen to take up to 29 s.
   */
  startTimeoutMs?: number;
  /**
   * `c1` (default): the quick tier only, for a short-lived emulator (tests, `npm start`): it answers
   * at full speed within seconds. `full`: the JVM's C1 then C2, for a long run under load: the
   * groups bench's leaves (64 partitions, five members, one 2-core machine) were CPU-bound, the
   * emulator the largest share, and on C2's code 21 of 27 leaves handed every partition over within
   * 200 ms, against 5 of 18 on C1 (docs/groups.md#measured).
   */
  jit?: 'c1' | 'full';
}

export interface DynamoDBLocal {
  endpoint: string;
  port: number;
  process: ChildProcess;
  /** Stops the emulator and waits for the process to be gone. */
  stop(): Promise<void>;
}

/** Fake static credentials: DynamoDB Local accepts any, and they keep the SDK's chain from searching. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
export const LOCAL_REGION = 'us-east-1';

export function emulatorDirectory(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('amplify-dynamodb-simulator/package.json');
  return join(dirname(pkg), 'emulator');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Compiles the loopback launcher if its class file is missing or older than its source. */
function compileLauncher(classpath: string): string {
  const source = join(dirname(fileURLToPath(import.meta.url)), 'LoopbackDynamoDBLocal.java');
  const require = createRequire(import.meta.url);
  const cacheDir = join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), '..', '.cache', 'leasehold');
  const compiled = join(cacheDir, 'LoopbackDynamoDBLocal.class');
  if (!existsSync(compiled) || statSync(compiled).mtimeMs < statSync(source).mtimeMs) {
    mkdirSync(cacheDir, { recursive: true });
    execFileSync('javac', ['-nowarn', '-cp', classpath, '-d', cacheDir, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  }
  return cacheDir;
}

export async function startDynamoDBLocal(options: DynamoDBLocalOptions = {}): Promise<DynamoDBLocal> {
  const port = options.port && options.port > 0 ? options.port : await freePort();
  const emulator = emulatorDirectory();
  const classpath = `${join(emulator, 'DynamoDBLocal.jar')}:${join(emulator, 'DynamoDBLocal_lib', '*')}`;
  const launcherDir = compileLauncher(classpath);
  const storage = options.dataDir ? ['-dbPath', options.dataDir] : ['-inMemory'];
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });

  const child = spawn(
    'java',
    [
      // Fast start for a short-lived dev database: C1 only (unless asked for the full JIT), one GC thread.
      ...(options.jit === 'full' ? [] : ['-XX:TieredStopAtLevel=1']),
      '-XX:+UseSerialGC',
      `-Dleasehold.exitWithParent=${options.exitWithParent === false ? 'false' : 'true'}`,
      `-Djava.library.path=${join(emulator, 'DynamoDBLocal_lib')}`,
      '-cp',
      `${launcherDir}:${classpath}`,
      'LoopbackDynamoDBLocal',
      ...storage,
      '-port',
      String(port),
      '-disableTelemetry',
    ],
    { stdio: ['pipe', options.verbose ? 'inherit' : 'ignore', options.verbose ? 'inherit' : 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });

  const endpoint = `http://127.0.0.1:${port}`;
  const probe = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = Date.now() + startTimeoutMs;
  try {
    for (;;) {
      if (spawnError) throw new Error(`could not start java for DynamoDB Local: ${spawnError.message}`, { cause: spawnError });
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}: ${stderr.trim()}`);
      try {
        await probe.send(new ListTablesCommand({}));
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${startTimeoutMs / 1000} s: ${stderr.trim()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    probe.destroy();
  }

  return {
    endpoint,
    port,
    process: child,
    stop: () => stopChild(child, exited),
  };
}

/**
 * SIGTERM, then SIGKILL if the process has not exited within `graceMs`; resolves once `exited`
 * does. Nothing to do for a process that already exited.
 */
export async function stopChild(child: ChildProcess, exited: Promise<void>, graceMs = 3_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
