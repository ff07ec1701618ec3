import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import {
  ForbiddenError,
  LeaseholdError,
  MethodNotAllowedError,
  PayloadTooLargeError,
  RouteNotFoundError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../../client/src/protocol/index.js';
import { errorResponse, jsonResponse } from '../../functions/http/responses.js';
import { createHostPolicy, type HostPolicy } from '../host-policy.js';
import { OUTAGE_MODES, type OutageMode } from './region-gate.js';
import type { LocalRegion, LocalRegions } from './regions.js';
import { validateInjection } from './write-conflicts.js';

/**
 * `npm start -- --regions 3`'s switchboard: a small HTTP API on 127.0.0.1 that takes a Region down
 * and brings it back, or makes its store meet replicated write conflicts.
 *
 *   GET  /regions                      every Region: name, url, state, clock offset, conflicts injected
 *   POST /regions/{name}/down          {"mode":"refuse"|"blackhole"|"unavailable"}
 *   POST /regions/{name}/up            {}
 *   POST /regions/{name}/conflicts     {"count":N} or {"probability":P} ({"count":0} stops)
 *
 * Each answer is the Region (or the list) as it is afterwards. A POST must be `application/json`
 * and no request may carry an `Origin`: a web page cannot send either without the browser asking
 * first, so no page open in a browser can take a Region down. Only loopback host names are answered.
 */
export interface RegionControl {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export const CONTROL_BODY_MAX_BYTES = 1024;

export async function startRegionControl(regions: LocalRegions, options: { port?: number } = {}): Promise<RegionControl> {
  const server: Server = createServer((req, res) => {
    handle(req, regions, hosts)
      .then((body) => send(res, jsonResponse(200, body)))
      .catch((error: unknown) => {
        const answer = errorResponse(error instanceof LeaseholdError ? error : new ValidationError('request', 'could not be read'));
        if (error instanceof MethodNotAllowedError) answer.headers = { ...answer.headers, allow: error.allow.join(', ') };
        send(res, answer);
      });
  });
  const hosts = createHostPolicy({ port: () => (server.address() as AddressInfo).port });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The answer's body (200), or throws the error to answer. */
async function handle(req: IncomingMessage, regions: LocalRegions, hosts: HostPolicy): Promise<unknown> {
  const refusal = hosts.refuseHost(req.headers.host);
  if (refusal) throw refusal;
  if (req.headers.origin !== undefined) throw new ForbiddenError('The Regions are switched from a terminal or a test, never from a web page: a request with an Origin is refused.');
  const path = (req.url ?? '/').split('?')[0] as string;
  if (path === '/regions') {
    if (req.method !== 'GET') throw new MethodNotAllowedError(`${req.method} ${path} is not served; use GET.`, { allow: ['GET'] });
    req.resume();
    return { regions: regions.regions.map(describeRegion) };
  }
  const match = /^\/regions\/([^/]+)\/(down|up|conflicts)$/.exec(path);
  if (!match) throw new RouteNotFoundError(`No route ${path}: see GET /regions, POST /regions/{name}/down, /up or /conflicts.`);
  if (req.method !== 'POST') throw new MethodNotAllowedError(`${req.method} ${path} is not served; use POST.`, { allow: ['POST'] });
  const region = findRegion(regions, decodeURIComponent(match[1] as string));
  const body = await readJson(req);
  switch (match[2]) {
    case 'down':
      await region.down(outageMode(body.mode));
      break;
    case 'up':
      await region.up();
      break;
    default:
      region.injectReplicatedWriteConflicts(injection(body));
  }
  return { region: describeRegion(region) };
}

function describeRegion(region: LocalRegion) {
  return { name: region.name, url: region.url, state: region.state(), clockOffsetMs: region.clockOffsetMs, injectedConflicts: region.injectedConflicts() };
}

function findRegion(regions: LocalRegions, name: string): LocalRegion {
  const region = regions.regions.find((r) => r.name === name);
  if (region === undefined) throw new RouteNotFoundError(`No Region "${name.slice(0, 40)}": the Regions are ${regions.regions.map((r) => r.name).join(', ')}.`);
  return region;
}

function outageMode(mode: unknown): OutageMode {
  if (!OUTAGE_MODES.includes(mode as OutageMode)) throw new ValidationError('mode', `must be one of ${OUTAGE_MODES.join(', ')}`, { received: mode });
  return mode as OutageMode;
}

function injection(body: Record<string, unknown>): number | { probability: number } {
  const what = body.count !== undefined ? body.count : body.probability !== undefined ? { probability: body.probability } : undefined;
  try {
    validateInjection(what);
  } catch {
    throw new ValidationError('count', 'must be a non-negative integer, or give `probability` from 0 to 1', { received: body.count ?? body.probability });
  }
  return what;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    req.resume();
    throw new UnsupportedMediaTypeError("A POST to the Regions' control must be JSON: add -H 'content-type: application/json'.");
  }
  let text = '';
  for await (const chunk of req) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > CONTROL_BODY_MAX_BYTES) throw new PayloadTooLargeError(`The body is over ${CONTROL_BODY_MAX_BYTES} bytes.`);
  }
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ValidationError('body', 'must be a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ValidationError('body', 'must be a JSON object');
  return parsed as Record<string, unknown>;
}

function send(res: ServerResponse, answer: APIGatewayProxyStructuredResultV2): void {
  res.writeHead(answer.statusCode ?? 200, answer.headers as Record<string, string>).end(answer.body);
}
