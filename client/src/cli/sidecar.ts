/// <reference types="node" />
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HealthCheck } from '../leader/health.js';
import { createLeader, type Leader } from '../leader/leader.js';
import { LeaderMetrics, PROMETHEUS_CONTENT_TYPE } from '../term/metrics.js';
import { RELEASE_TIMEOUT_MS, defaultRenewEveryMs } from '../time/timing.js';
import { campaignApi, dedupe, errorMessage, withTimeout } from './campaign.js';
import { EXIT_CODE_HELP, ExitCode, UsageError } from './exit-codes.js';
import { formatMs } from './format.js';
import { renderByKeyClass } from './key-class-metrics.js';
import { PARENT_POLL_MS, watchParent } from './parent-watch.js';
import type { Command } from './lease-commands.js';
import {
  CONNECTION_HELP,
  CONNECTION_OPTIONS,
  checkHolder,
  connect,
  defaultHolder,
  parseCommandLine,
  parseDuration,
  parsePriority,
  parseTtl,
  requireName,
  watchFrom,
} from './options.js';

/**
 * `leasehold sidecar NAME --port 8080`: holds the lease for a main container that cannot (or should
 * not) embed the SDK. The main container asks `GET /leader` before leader work; the answer is
 * computed from `leader.isLeader()` at request time, so it turns false at the local deadline even
 * if nothing else happens (fail-closed). With `--health-url`, the main container's own health
 * endpoint is the leader's health check: a sick main container gives the lease up.
 */

export const SIDECAR_HELP = `Usage: leasehold sidecar NAME [--port 8080] [options]

Holds the lease NAME with the SDK's leader (renewed every ttl/3, fail-closed) and serves:

  GET /leader    200 {"leader":true,"name","holder","token"} while this sidecar leads;
                 503 {"leader":false,"name","holder","self"} otherwise (holder: the current holder
                 as last seen, or null). Decided at request time: false from the local deadline on
  GET /healthz   200 while the sidecar runs (its own liveness, not leadership)
  GET /metrics   Prometheus text of the leader metrics, labelled key_class (the part of the lease
                 name before the first ":"), not by lease name, so per-lease names stay cheap

The main container checks /leader before leader work and passes the token along to fence its
writes. On SIGTERM (a rolling deploy) the sidecar releases the lease before exiting, so a standby
takes over at once instead of after a ttl. It does the same when the process that started it exits
(checked every ${formatMs(PARENT_POLL_MS)}): under npx, a SIGTERM ends npm without reaching the sidecar
(--outlive-parent turns that off).

Options:
  --port N              port to serve on (default 8080; 0 picks a free one)
  --host H              address to bind (default 127.0.0.1: containers of one ECS task or one
                        Kubernetes pod share it). Use 0.0.0.0 for probes or scrapes from outside
  --ttl D               lease time to live (default 15s; 1s to 1h)
  --holder H            identity shown as the lease holder (default hostname:pid)
  --priority N          campaign with this priority (0 to 1000000, default 0): a leader of a lower
                        priority yields to this sidecar, and this one yields to a higher one
  --health-url URL      the main container's health endpoint: checked before every renewal and
                        before every campaign attempt; a non-2xx answer, an error or a timeout is a
                        failure
  --health-timeout D    time limit of one check (default min(ttl/6, 5s); less than ttl/3)
  --unhealthy-after N   failed checks in a row after which the leader steps down and releases
                        (default 2); it campaigns again once a check passes
  --watch URL           the watch WebSocket (env LEASEHOLD_WATCH_URL): a pushed release cuts a
                        standby's wait short. Locally ws://127.0.0.1:8787/v1/watch; in AWS the
                        stack output WatchUrl (wss://…/v1), signed like the API. Repeat it (or a
                        comma-separated LEASEHOLD_WATCH_URL) for several Regions, preferred first
  --retry-every D       while someone else holds the lease, try again at least this often
                        (default ttl/3), so a released lease is taken over within one interval
  --quiet               no status lines on stderr
  --outlive-parent      keep running when the process that started the sidecar exits (nohup, a
                        script that starts it in the background and exits); by default that stops
                        it as a SIGTERM

Example (the sidecar of a main container whose health endpoint is :3000/health):
  leasehold sidecar billing:sweeper --port 8080 --health-url http://127.0.0.1:3000/health
  curl -s localhost:8080/leader   # {"leader":true,"name":"billing:sweeper","holder":"ip-10-0-1-7:1","token":42}

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const sidecarCommand: Command = async (argv) => {
  const { values, positionals } = parseCommandLine('sidecar', argv, {
    ...CONNECTION_OPTIONS,
    port: { type: 'string' },
    host: { type: 'string' },
    ttl: { type: 'string' },
    holder: { type: 'string' },
    priority: { type: 'string' },
    'health-url': { type: 'string' },
    'health-timeout': { type: 'string' },
    'unhealthy-after': { type: 'string' },
    watch: { type: 'string', multiple: true },
    'retry-every': { type: 'string' },
    quiet: { type: 'boolean' },
    'outlive-parent': { type: 'boolean' },
  });
  const name = requireName(positionals, 'sidecar');
  const port = Number(values.port ?? '8080');
  if (!/^[0-9]+$/.test(values.port ?? '8080') || port > 65_535) throw new UsageError(`--port must be a port number from 0 to 65535 (got "${values.port}").`, 'sidecar');
  const host = values.host ?? '127.0.0.1';
  const holder = values.holder === undefined ? defaultHolder('sidecar') : checkHolder(values.holder, 'sidecar');
  const ttlMs = parseTtl(values.ttl ?? '15s', 'sidecar');
  const priority = values.priority === undefined ? undefined : parsePriority(values.priority, 'sidecar');
  const renewEveryMs = defaultRenewEveryMs(ttlMs);
  const retryEveryMs = values['retry-every'] === undefined ? renewEveryMs : parseDuration(values['retry-every'], 'retry-every', 'sidecar');
  if (retryEveryMs <= 0) throw new UsageError('--retry-every must be more than 0.', 'sidecar');
  const healthCheck = values['health-url'] === undefined ? undefined : httpHealthCheck(values['health-url']);
  const healthCheckTimeoutMs = values['health-timeout'] === undefined ? undefined : parseDuration(values['health-timeout'], 'health-timeout', 'sidecar');
  if (healthCheckTimeoutMs !== undefined && (healthCheckTimeoutMs <= 0 || healthCheckTimeoutMs >= renewEveryMs)) {
    throw new UsageError(`--health-timeout must be more than 0 and less than the renewal interval (about ttl/3 = ${formatMs(renewEveryMs)}).`, 'sidecar');
  }
  let unhealthyAfter: number | undefined;
  if (values['unhealthy-after'] !== undefined) {
    unhealthyAfter = Number(values['unhealthy-after']);
    if (!/^[0-9]+$/.test(values['unhealthy-after']) || unhealthyAfter < 1) {
      throw new UsageError(`--unhealthy-after must be an integer of at least 1 (got "${values['unhealthy-after']}").`, 'sidecar');
    }
  }
  const connection = connect(values, 'sidecar');
  const { client } = connection;
  const watch = watchFrom(values.watch, connection, 'sidecar');
  const log = values.quiet ? () => undefined : (line: string) => process.stderr.write(`leasehold sidecar: ${line}\n`);
  const logOnce = dedupe(log);

  const metrics = new LeaderMetrics();
  let currentHolder: string | null = null;
  let fatal: { error: unknown } | undefined;
  let fail: (error: unknown) => void = () => undefined;
  const failed = new Promise<void>((resolve) => {
    fail = (error) => {
      fatal ??= { error };
      resolve();
    };
  });

  const leader: Leader = createLeader(
    campaignApi(client, retryEveryMs, {
      onHeld: (lease) => {
        currentHolder = lease.holder;
        logOnce(`${name} is ${lease.holder === null ? 'not available yet' : `held by ${lease.holder}`} (token ${lease.token}); standing by`);
      },
      onError: (error) => logOnce(`cannot acquire ${name}: ${errorMessage(error).replace(/\.$/, '')} (retrying)`),
      onFatal: fail,
    }),
    {
      name,
      holder,
      ttlMs,
      ...(priority === undefined ? {} : { priority }),
      ...(healthCheck ? { healthCheck } : {}),
      ...(healthCheckTimeoutMs !== undefined ? { healthCheckTimeoutMs } : {}),
      ...(unhealthyAfter !== undefined ? { unhealthyAfter } : {}),
      ...(watch !== undefined ? { watch } : {}),
      warnings: false, // the sidecar logs what happens in its own words
      onEvent: (event) => {
        metrics.record(event);
        switch (event.type) {
          case 'elected':
            currentHolder = holder;
            log(`leading ${name} as ${holder} (token ${event.token})`);
            return;
          case 'lost':
            if (currentHolder === holder) currentHolder = null;
            log(`stopped leading ${name} (${event.reason}, token ${event.token})`);
            return;
          case 'healthCheckFailed':
            // While leading each failure counts towards stepping down; while standing by, say it once.
            if (event.token !== undefined) log(`health check failed (${event.failure}, ${event.consecutive} in a row)`);
            else logOnce(`health check failing (${event.failure}): not campaigning until it passes`);
            return;
          case 'error':
            if (event.operation === 'release') log(`could not release ${name}: ${errorMessage(event.error)} (it expires on its own within the ttl)`);
            return;
          default:
            return;
        }
      },
    },
  );

  const server = createServer((req, res) => serve(req, res, { name, holder, leader, metrics, currentHolder: () => currentHolder }));
  await listen(server, port, host);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
  log(`serving ${url}/leader, /healthz and /metrics for ${name} as ${holder}`);
  leader.start();

  let stopWatchingParent: () => void = () => undefined;
  const signalled = await Promise.race([
    failed.then(() => undefined),
    new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
      // Under `npx`, a process manager's SIGTERM ends npm and never reaches us: its exit counts as one.
      if (values['outlive-parent'] !== true) {
        stopWatchingParent = watchParent((parentPid) => resolve(`the process that started the sidecar (pid ${parentPid}) is gone`));
      }
    }),
  ]);
  stopWatchingParent();
  if (signalled !== undefined) log(`${signalled}: releasing ${name} and exiting`);
  await withTimeout(leader.stop(), RELEASE_TIMEOUT_MS);
  watch?.close();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  if (fatal !== undefined) throw fatal.error;
  return ExitCode.OK;
};

/** The main container's health endpoint as a health check: 2xx passes; anything else fails. */
function httpHealthCheck(raw: string): HealthCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--health-url must be an absolute http(s) URL (got "${raw}").`, 'sidecar');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--health-url must be an http(s) URL (got "${raw}").`, 'sidecar');
  return async function mainContainerHealth(signal) {
    const response = await fetch(url, { signal, redirect: 'manual', headers: { 'user-agent': 'leasehold-sidecar' } });
    await response.body?.cancel();
    return response.status >= 200 && response.status < 300;
  };
}

interface ServeContext {
  name: string;
  holder: string;
  leader: Leader;
  metrics: LeaderMetrics;
  currentHolder(): string | null;
}

function serve(req: IncomingMessage, res: ServerResponse, ctx: ServeContext): void {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end(JSON.stringify({ error: 'method not allowed' }));
    return;
  }
  switch (path) {
    case '/leader': {
      // One clock read, at request time: undefined from the local deadline on (fail-closed).
      const token = ctx.leader.token;
      const body =
        token !== undefined
          ? { leader: true, name: ctx.name, holder: ctx.holder, token }
          : { leader: false, name: ctx.name, holder: ctx.currentHolder(), self: ctx.holder };
      sendJson(res, token !== undefined ? 200 : 503, body);
      return;
    }
    case '/healthz':
      sendJson(res, 200, { ok: true });
      return;
    case '/metrics':
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' }).end(renderByKeyClass(ctx.metrics));
      return;
    default:
      sendJson(res, 404, { error: 'not found: GET /leader, /healthz or /metrics' });
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' }).end(text);
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new UsageError(`cannot listen on ${host}:${port}: ${error.code ?? error.message} (choose another --port or --host).`, 'sidecar')),
    );
    server.listen(port, host, () => resolve());
  });
}
