import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

/** What the numbers were measured on: printed at the top of the report and kept in the JSON. */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  java: string;
  dynamodbLocal: string;
  /** 1-minute load average when the run started and when it ended (other work on the machine). */
  loadAverageAtStart: number;
  loadAverageAtEnd?: number;
}

function javaVersion(): string {
  try {
    const out = execFileSync('java', ['-version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return out.split('\n')[0]?.trim() ?? 'unknown';
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '');
    return stderr.split('\n')[0]?.trim() || 'unknown';
  }
}

function javaVersionFromStderr(): string {
  // `java -version` prints to stderr; execFileSync only returns stdout.
  try {
    const out = execFileSync('sh', ['-c', 'java -version 2>&1'], { encoding: 'utf8' });
    return out.split('\n')[0]?.trim() ?? 'unknown';
  } catch {
    return javaVersion();
  }
}

function osName(): string {
  try {
    const release = readFileSync('/etc/os-release', 'utf8');
    const pretty = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(release)?.[1];
    if (pretty) return `${pretty}, Linux ${os.release()}`;
  } catch {
    // not Linux, or no os-release
  }
  return `${os.type()} ${os.release()}`;
}

export function machineInfo(): MachineInfo {
  const require = createRequire(import.meta.url);
  let simulator = 'unknown';
  try {
    simulator = (require('amplify-dynamodb-simulator/package.json') as { version: string }).version;
  } catch {
    // left as unknown
  }
  return {
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: osName(),
    node: process.version,
    java: javaVersionFromStderr(),
    dynamodbLocal: `DynamoDB Local from amplify-dynamodb-simulator ${simulator} (in memory, C1 JIT unless said otherwise below, serial GC, 127.0.0.1)`,
    loadAverageAtStart: os.loadavg()[0] ?? 0,
  };
}

export function loadAverageNow(): number {
  return os.loadavg()[0] ?? 0;
}
