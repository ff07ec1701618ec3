import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import { freePort, stopChild } from '../local/dynamodb/dynamodb-local.js';
import { sleep } from './clock.js';
import { track } from './processes.js';

/**
 * The peers measured beside leasehold: etcd (Debian's `etcd-server`) and Redis (`redis-server`),
 * each started on 127.0.0.1 with its data in a temporary folder (or none), and stopped by PID.
 * When a binary is missing, `ensurePeerBinaries` installs Debian's packages (apt-get, as root);
 * if that fails the peer is skipped with a message that says why.
 */

const run = promisify(execFile);

export interface PeerAvailability {
  etcd: { available: boolean; version?: string; reason?: string };
  redis: { available: boolean; version?: string; reason?: string };
  installed: string[];
}

async function which(binary: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${binary}`]);
    return true;
  } catch {
    return false;
  }
}

async function versionOf(binary: string, args: string[], pattern: RegExp): Promise<string | undefined> {
  try {
    const { stdout } = await run(binary, args);
    return pattern.exec(stdout)?.[1];
  } catch {
    return undefined;
  }
}

export async function ensurePeerBinaries(log: (line: string) => void): Promise<PeerAvailability> {
  const wanted: Array<{ binary: string; packages: string[] }> = [
    { binary: 'etcd', packages: ['etcd-server', 'etcd-client'] },
    { binary: 'redis-server', packages: ['redis-server'] },
  ];
  const missing = [];
  for (const w of wanted) if (!(await which(w.binary))) missing.push(w);
  const installed: string[] = [];
  let installError: string | undefined;
  if (missing.length > 0) {
    const packages = missing.flatMap((m) => m.packages);
    if (typeof process.getuid === 'function' && process.getuid() !== 0) {
      installError = `not root, cannot apt-get install ${packages.join(' ')} (install them yourself to compare)`;
    } else {
      log(`installing ${packages.join(', ')} from Debian's packages (apt-get)…`);
      try {
        const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
        await run('apt-get', ['update', '-qq', '-o', 'DPkg::Lock::Timeout=300'], { env, timeout: 300_000 });
        await run('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=300', ...packages], { env, timeout: 600_000 });
        installed.push(...packages);
      } catch (error) {
        installError = `apt-get install ${packages.join(' ')} failed: ${(error as Error).message.split('\n')[0]}`;
      }
    }
  }
  const etcdOk = await which('etcd');
  const redisOk = await which('redis-server');
  return {
    etcd: etcdOk
      ? { available: true, version: await versionOf('etcd', ['--version'], /etcd Version: (\S+)/) }
      : { available: false, reason: installError ?? 'etcd not found' },
    redis: redisOk
      ? { available: true, version: await versionOf('redis-server', ['--version'], /v=(\S+)/) }
      : { available: false, reason: installError ?? 'redis-server not found' },
    installed,
  };
}

export interface PeerServer {
  url: string;
  port: number;
  pid: number | undefined;
  stop(): Promise<void>;
}

async function stopPeer(child: ChildProcess, cleanup?: () => void): Promise<void> {
  await stopChild(child, new Promise<void>((resolve) => child.once('exit', () => resolve())));
  cleanup?.();
}

/** etcd on 127.0.0.1 only, data in a temporary folder. */
export async function startEtcd(): Promise<PeerServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-etcd-'));
  const clientPort = await freePort();
  const peerPort = await freePort();
  const url = `http://127.0.0.1:${clientPort}`;
  const child = track(
    spawn(
      'etcd',
      [
        '--name', 'bench',
        '--data-dir', dataDir,
        '--listen-client-urls', url,
        '--advertise-client-urls', url,
        '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
        '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
        '--initial-cluster', `bench=http://127.0.0.1:${peerPort}`,
        '--log-level', 'error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    ),
  );
  child.stderr?.resume();
  const client = new Etcd3({ hosts: url });
  const deadline = performance.now() + 20_000;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`etcd exited with code ${child.exitCode}`);
      try {
        await client.put('bench-ready').value('1');
        break;
      } catch (error) {
        if (performance.now() > deadline) throw new Error(`etcd did not answer on ${url}: ${(error as Error).message}`);
        await sleep(100);
      }
    }
  } finally {
    client.close();
  }
  return { url, port: clientPort, pid: child.pid, stop: () => stopPeer(child, () => rmSync(dataDir, { recursive: true, force: true })) };
}

/** redis-server on 127.0.0.1 only, no persistence. */
export async function startRedis(): Promise<PeerServer> {
  const port = await freePort();
  const child = track(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  child.stderr?.resume();
  const deadline = performance.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch (error) {
      probe.disconnect();
      if (performance.now() > deadline) throw new Error(`redis-server did not answer on port ${port}: ${(error as Error).message}`);
      await sleep(50);
    }
  }
  return { url: `redis://127.0.0.1:${port}`, port, pid: child.pid, stop: () => stopPeer(child) };
}
