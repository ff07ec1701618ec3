/** The npm `dynamodb-lock-client` ships no types: the part of its API the bench uses (bench/lock-client.ts). */
declare module 'dynamodb-lock-client' {
  interface FailOpenConfig {
    dynamodb: unknown;
    lockTable: string;
    partitionKey: string;
    heartbeatPeriodMs?: number;
    leaseDurationMs: number;
    trustLocalTime?: boolean;
    owner?: string;
    retryCount?: number;
  }
  class FailOpen {
    constructor(config: FailOpenConfig);
    acquireLock(id: string, callback: (error: (Error & { code?: string }) | undefined, lock?: never) => void): void;
  }
  const LockClient: { FailOpen: typeof FailOpen };
  export default LockClient;
}
