import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PutItemCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  APIGatewayProxyWebsocketEventV2,
  Context,
  DynamoDBStreamEvent,
} from 'aws-lambda';
import { expect } from 'vitest';
import { matchRoute, type RouteMatch } from '../../functions/http/routes.js';
import type { LeaseRecord } from '../../functions/lease-record.js';
import { PUSH_METRIC } from '../../functions/watch/direct-push.js';
import type { FunctionId } from '../../infra/lease-service.js';
import { WATCH_STAGE_NAME, type WatchFunctionId } from '../../infra/lease-watch.js';
import { lambdaContextData, type LambdaContextOptions } from '../../local/lambda-context.js';
import { ACCOUNT, REGION, resourcesOfType, subscriptionTableIdOf, type CfnTemplate } from './synth-support.js';

/**
 * What synthesized-app.test.ts needs to run the bundled functions beside the source handlers: the
 * runner process for the bundles, the recording stand-in for the management API, and the events
 * API Gateway and DynamoDB Streams would deliver.
 */

export type AnyFunctionId = FunctionId | WatchFunctionId;

export type Handler = (event: unknown, context: Context) => Promise<unknown>;
/** Invokes one function and returns its result with what it wrote to stdout/stderr. */
export type Invoker = (id: AnyFunctionId, event: unknown) => Promise<{ value: unknown; output: string }>;

/**
 * The bundles run in their own plain Node process (lambda-runner.mjs), not in Vitest's: Vitest would
 * transform the file on the way in, and the point is to load it exactly as Lambda's Node runtime
 * does (native ESM loader, `import.meta.url`, `createRequire`, `--enable-source-maps`), from the
 * cloud assembly in a temp folder with no node_modules above it.
 */
export class BundleRunner {
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (m: RunnerReply) => void }>();
  private stderr = '';

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: RunnerReply) => {
      if (message.seq === undefined) return;
      this.pending.get(message.seq)?.resolve(message);
      this.pending.delete(message.seq);
    });
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }

  static async start(env: NodeJS.ProcessEnv, cwd: string): Promise<BundleRunner> {
    const child = fork(fileURLToPath(new URL('./lambda-runner.mjs', import.meta.url)), [], {
      cwd,
      env,
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`lambda-runner exited with ${code}`)));
    });
    return new BundleRunner(child);
  }

  private request(message: Record<string, unknown>): Promise<RunnerReply> {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve });
      this.child.send({ ...message, seq }, (error) => error && reject(error));
    }).then((reply) => {
      const r = reply as RunnerReply;
      if (!r.ok) throw new Error(`lambda-runner: ${r.error}\n${this.stderr}`);
      return r;
    });
  }

  async load(id: AnyFunctionId, file: string): Promise<void> {
    await this.request({ type: 'load', id, url: pathToFileURL(file).href, functionName: `leasehold-${id}` });
  }

  readonly invoke: Invoker = async (id, event) => {
    const reply = await this.request({ type: 'invoke', id, event, context: lambdaContextData(bundleContextOptions(id)) });
    return { value: reply.result, output: reply.output ?? '' };
  };

  stop(): void {
    this.child.kill();
  }
}

/** The Lambda context of one of the app's functions, as the synthesized app names it (bundle or source alike). */
export function bundleContextOptions(id: AnyFunctionId): LambdaContextOptions {
  return {
    functionName: `leasehold-${id}`,
    region: REGION,
    accountId: ACCOUNT,
    remainingMs: 5_000,
    logStreamName: '2026/01/01/[$LATEST]0123456789abcdef',
    callbackWaitsForEmptyEventLoop: true,
  };
}

export interface RunnerReply {
  seq?: number;
  ok: boolean;
  result?: unknown;
  output?: string;
  error?: string;
}

/** One call to the management API (`POST /@connections/{id}` and the like), as the stand-in saw it. */
export interface ManagementCall {
  /** `bundle` or `source`: the first path segment, standing in for the stage of each side's endpoint. */
  side: string;
  method: string;
  connectionId: string;
  body: unknown;
  authorization: string;
}

/**
 * A stand-in for the API Gateway management API at `http://127.0.0.1:{port}/{side}`: it records
 * every call and answers 200, or 410 GoneException (as API Gateway does) for a connection marked
 * gone. Each side's WEBSOCKET_MANAGEMENT_ENDPOINT carries its own path, like a real stage.
 */
export class ManagementApiRecorder {
  readonly calls: ManagementCall[] = [];
  readonly gone = new Set<string>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<ManagementApiRecorder> {
    let recorder: ManagementApiRecorder | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const match = /^\/([a-z]+)\/@connections\/([^/?]+)$/.exec(req.url ?? '');
        if (!match) {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
          return;
        }
        const connectionId = decodeURIComponent(match[2] as string);
        const text = Buffer.concat(chunks).toString('utf8');
        recorder?.calls.push({
          side: match[1] as string,
          method: req.method ?? '',
          connectionId,
          body: text === '' ? undefined : JSON.parse(text),
          authorization: req.headers.authorization ?? '',
        });
        if (recorder?.gone.has(connectionId)) {
          res.writeHead(410, { 'content-type': 'application/json', 'x-amzn-errortype': 'GoneException' }).end('{"message":null}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    recorder = new ManagementApiRecorder(server, (server.address() as { port: number }).port);
    return recorder;
  }

  endpoint(side: 'bundle' | 'source'): string {
    return `http://127.0.0.1:${this.port}/${side}`;
  }

  /** The calls one side made since `from` (an index into `calls`). */
  callsOf(side: 'bundle' | 'source', from = 0): ManagementCall[] {
    return this.calls.slice(from).filter((call) => call.side === side);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Names of the metrics the invocation published as EMF on stdout. */
  metrics: string[];
}

export interface Request {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  query?: Record<string, string>;
}

/**
 * Finds the function for a request the way API Gateway's route keys would: the app's own route
 * table (matchRoute), and `$default` (the fallback function) for anything it refuses.
 */
export function routeFor(method: string, path: string): { id: FunctionId; routeKey: string; pathParameters?: Record<string, string> } {
  let match: RouteMatch;
  try {
    match = matchRoute(method, path);
  } catch {
    return { id: 'fallback', routeKey: '$default' };
  }
  const { route, pathParameters } = match;
  return { id: route.id, routeKey: `${route.method} ${route.path}`, ...(pathParameters.name ? { pathParameters } : {}) };
}

export function apiEvent(request: Request, routeKey: string, pathParameters?: Record<string, string>): APIGatewayProxyEventV2 {
  const body = request.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
  const rawQueryString = new URLSearchParams(request.query ?? {}).toString();
  return {
    version: '2.0',
    routeKey,
    rawPath: request.path,
    rawQueryString,
    headers: {
      'content-type': request.contentType ?? 'application/json',
      host: 'abc123.execute-api.us-east-1.amazonaws.com',
      'user-agent': 'leasehold-infra-test',
      ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
    },
    ...(request.query ? { queryStringParameters: request.query } : {}),
    ...(pathParameters ? { pathParameters } : {}),
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: false,
    requestContext: {
      accountId: ACCOUNT,
      apiId: 'abc123',
      domainName: 'abc123.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: { method: request.method, path: request.path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'leasehold-infra-test' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: '01/Jan/2026:00:00:00 +0000',
      timeEpoch: 1_767_225_600_000,
    },
  };
}

/** Runs `fn` with stdout and stderr captured (Powertools writes EMF and warnings straight to them). */
export async function captured<T>(fn: () => Promise<T>): Promise<{ value: T; output: string }> {
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((s) => s.write);
  let output = '';
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      output += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }) as typeof stream.write;
  }
  try {
    return { value: await fn(), output };
  } finally {
    streams.forEach((stream, i) => (stream.write = originals[i] as typeof stream.write));
  }
}

export function emfMetricNames(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"_aws"'))
    .flatMap((line) => {
      const record = JSON.parse(line) as { _aws: { CloudWatchMetrics: Array<{ Metrics: Array<{ Name: string }> }> } };
      return record._aws.CloudWatchMetrics.flatMap((m) => m.Metrics.map((metric) => metric.Name));
    })
    .sort();
}

export async function invoke(invoker: Invoker, request: Request): Promise<Answer> {
  const { id, routeKey, pathParameters } = routeFor(request.method, request.path);
  const { value: result, output } = await invoker(id, apiEvent(request, routeKey, pathParameters));
  const value = result as APIGatewayProxyStructuredResultV2;
  const headers = Object.fromEntries(Object.entries(value.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
  return {
    status: value.statusCode ?? 200,
    headers,
    body: value.body === undefined ? undefined : JSON.parse(value.body),
    metrics: emfMetricNames(output),
  };
}

/**
 * Metrics that report how long something took against a bound, not what the handler did: whether
 * a direct push ran past its 50 ms budget depends on the machine's load at that instant.
 */
const TIMING_METRICS: ReadonlySet<string> = new Set([PUSH_METRIC.overBudget]);

export const VOLATILE_FIELDS = new Set(['token', 'leaseId', 'permitId', 'expiresAt', 'acquiredAt', 'renewedAt', 'remainingMs', 'retryAfterMs', 'reservedUntil']);

/**
 * An answer with what legitimately differs between two tables and two instants masked: tokens,
 * lease ids, times and every digit inside messages. Status, headers, codes, holders, names and the
 * exact shape of every body remain.
 */
export function comparable(answer: Answer): unknown {
  const mask = (value: unknown, key?: string): unknown => {
    if (key !== undefined && VOLATILE_FIELDS.has(key)) return value === null ? null : `<${typeof value}>`;
    if (Array.isArray(value)) return value.map((v) => mask(v));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v, k)]));
    }
    if (typeof value === 'string') return value.replace(/\d+/g, '#');
    return value;
  };
  const headers = { ...answer.headers };
  if (headers['retry-after'] !== undefined) headers['retry-after'] = '<seconds>';
  return { status: answer.status, headers, body: mask(answer.body), metrics: answer.metrics.filter((name) => !TIMING_METRICS.has(name)) };
}

/**
 * The PutItem calls of the template's watch grant custom resources (their `Create`), with the
 * subscriptions table's name filled in as CloudFormation would.
 */
export function publishedGrantCalls(template: CfnTemplate, tableName: string): PutItemCommandInput[] {
  const subscriptionTableId = subscriptionTableIdOf(template);
  const resolve = (value: unknown): string => {
    if (typeof value === 'string') return value;
    const node = value as { Ref?: string; 'Fn::Join'?: [string, unknown[]] };
    if (node.Ref === subscriptionTableId) return tableName;
    if (node['Fn::Join']) return node['Fn::Join'][1].map(resolve).join(node['Fn::Join'][0]);
    throw new Error(`unexpected intrinsic in a grant: ${JSON.stringify(value)}`);
  };
  return resourcesOfType(template, 'Custom::LeaseholdWatchGrant').map(([, props]) => {
    const call = JSON.parse(resolve(props.Create)) as { service: string; action: string; parameters: PutItemCommandInput };
    expect([call.service, call.action]).toEqual(['DynamoDB', 'PutItem']);
    return call.parameters;
  });
}

/** An API Gateway WebSocket event for one route, as Lambda receives it; `$connect` carries the IAM caller. */
export function socketEvent(
  routeKey: '$connect' | '$disconnect' | 'subscribe',
  connectionId: string,
  body?: unknown,
  callerArn?: string,
): APIGatewayProxyWebsocketEventV2 {
  const eventType = routeKey === '$connect' ? 'CONNECT' : routeKey === '$disconnect' ? 'DISCONNECT' : 'MESSAGE';
  return {
    requestContext: {
      routeKey,
      eventType,
      messageId: randomUUID(),
      extendedRequestId: randomUUID(),
      requestTime: '01/Jan/2026:00:00:00 +0000',
      messageDirection: 'IN',
      stage: WATCH_STAGE_NAME,
      connectedAt: 1_767_225_600_000,
      requestTimeEpoch: 1_767_225_600_000,
      requestId: randomUUID(),
      domainName: 'ws123.execute-api.us-east-1.amazonaws.com',
      connectionId,
      apiId: 'ws123',
      ...(callerArn === undefined ? {} : { identity: { userArn: callerArn, sourceIp: '203.0.113.7', userAgent: 'leasehold-infra-test' } }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  };
}

/** A lease item as the store writes it (see functions/lease-record.ts). */
export function leaseItem(name: string, fields: Partial<LeaseRecord>): LeaseRecord {
  return {
    pk: name,
    token: 1_767_225_600_000_001,
    transitions: 1,
    leaseId: 'a'.repeat(32),
    ttlMs: 15_000,
    lockDelayMs: 0,
    holdMs: 15_000,
    expiresAt: 1_767_225_615_000,
    availableAt: 1_767_225_615_000,
    acquiredAt: 1_767_225_600_000,
    renewedAt: 1_767_225_600_000,
    expireItemAt: 1_767_830_400,
    ...fields,
  };
}

let lastSequenceNumber = 100_000_000_000_000_000_000;
/** Stream sequence numbers only go up, as DynamoDB Streams' do within a shard. */
function nextSequenceNumber(): string {
  lastSequenceNumber += 100;
  return String(lastSequenceNumber);
}

/** A DynamoDB stream event with one record per change, as the event source mapping delivers it. */
export function streamEvent(...changes: Array<{ oldItem?: LeaseRecord; newItem: LeaseRecord }>): DynamoDBStreamEvent {
  const image = (item: LeaseRecord) => marshall(item, { removeUndefinedValues: true }) as unknown as Record<string, never>;
  return {
    Records: changes.map(({ oldItem, newItem }) => ({
      eventID: randomUUID().replaceAll('-', ''),
      eventName: oldItem ? 'MODIFY' : 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: REGION,
      eventSourceARN: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/Leasehold-LeasesTable/stream/2026-01-01T00:00:00.000`,
      dynamodb: {
        ApproximateCreationDateTime: 1_767_225_600,
        Keys: image({ pk: newItem.pk } as LeaseRecord),
        NewImage: image(newItem),
        ...(oldItem ? { OldImage: image(oldItem) } : {}),
        SequenceNumber: nextSequenceNumber(),
        SizeBytes: 300,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    })),
  };
}
