import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import type { LatencyProfileName } from '../../local/latency/hooks.js';
import { startLocalServer } from '../../local/server.js';

/**
 * One instance of the lease API for a chaos run: the local server (the Lambda handler modules
 * behind plain HTTP) with its own clock offset, as Lambda hosts' clocks differ. Started by
 * cluster.ts with `node --import tsx`; it says `listening` over IPC, stops on SIGTERM, and dies
 * with the harness.
 */
export interface ApiServerConfig {
  port: number;
  clockOffsetMs: number;
  tableName: string;
  dynamodbEndpoint: string;
  /** `--latency aws`: the profile and this instance's seed. Default: none ('local'). */
  latency?: { profile: LatencyProfileName; seed: number };
}

process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';

const config = JSON.parse(process.env.CHAOS_API ?? 'null') as ApiServerConfig | null;
if (config === null) throw new Error('api-server.ts is started by the chaos harness (CHAOS_API is not set)');
process.on('disconnect', () => process.exit(0));

const server = await startLocalServer({
  port: config.port,
  tableName: config.tableName,
  region: LOCAL_REGION,
  dynamodbEndpoint: config.dynamodbEndpoint,
  credentials: LOCAL_CREDENTIALS,
  clockOffsetMs: config.clockOffsetMs,
  ...(config.latency ? { latency: config.latency.profile, latencySeed: config.latency.seed } : {}),
});
process.send?.({ type: 'listening', port: server.port });

process.once('SIGTERM', () => {
  void server.close().finally(() => process.exit(0));
});
