import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { Template } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROUTES } from '../../functions/http/routes.js';
import { TABLE_ACTIONS_BY_ROUTE, type FunctionId } from '../../infra/lease-service.js';
import { createTestLeaseTable } from '../support/dynamodb.js';
import {
  ACCOUNT,
  REGION,
  actionsOf,
  cdkSynth,
  functionAssets,
  invokeArnsOfRole,
  readTemplate,
  resourcesOf,
  resourcesOfType,
  statementsOfRole,
  type CfnTemplate,
  type FunctionAsset,
} from './synth-support.js';

/**
 * The deployable artefact, end to end: the real `cdk synth` (pinned CLI, offline) writes the cloud
 * assembly that `cdk deploy` would upload; the template is checked with aws-cdk-lib/assertions, and
 * each function's bundled `index.mjs` is loaded by Node's own ESM loader in a separate plain Node
 * process (lambda-runner.mjs), from a folder with no node_modules above it, and invoked with API
 * Gateway v2 events against DynamoDB Local, side by side with the source handlers.
 */

const STACK = 'Leasehold';
const ALARM_TOPIC_ARN = `arn:aws:sns:${REGION}:${ACCOUNT}:leasehold-alarms`;
const API_ARN = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{api}/$default`;
const FUNCTION_IDS: FunctionId[] = [...ROUTES.map((r) => r.id), 'fallback'];
/** Bundle size budgets (bytes of index.mjs). Raising one is a decision: record it in docs/deploy.md. */
const BUNDLE_BUDGET_BYTES = { route: 450 * 1024, fallback: 16 * 1024 };

let workDir: string;
let outDir: string;
let json: CfnTemplate;
let template: Template;
let assets: Map<FunctionId, FunctionAsset>;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'leasehold-synth-'));
  outDir = join(workDir, 'cdk.out');
  await cdkSynth({
    outDir,
    cdkHome: join(workDir, 'cdk-home'),
    context: {
      'leasehold:alarmTopicArn': ALARM_TOPIC_ARN,
      'leasehold:grants': JSON.stringify([
        { roleArn: `arn:aws:iam::${ACCOUNT}:role/team-a-tasks`, namePrefix: 'team-a.' },
        { roleArn: `arn:aws:iam::${ACCOUNT}:role/dashboard`, access: 'read' },
      ]),
    },
  });
  json = readTemplate(outDir, STACK);
  template = Template.fromJSON(json as unknown as Record<string, unknown>);
  assets = new Map(
    functionAssets(outDir, STACK).map((asset) => [(asset.logicalId.match(/^Leases([A-Z][a-z]+)Function/)?.[1] ?? '').toLowerCase() as FunctionId, asset]),
  );
}, 300_000);

afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

describe('cdk synth (pinned CLI, offline)', () => {
  it('requires AWS_IAM authorization on every route of the synthesized API', () => {
    const routes = resourcesOfType(json, 'AWS::ApiGatewayV2::Route');
    expect(routes).toHaveLength(ROUTES.length + 1);
    for (const [, props] of routes) expect(props.AuthorizationType).toBe('AWS_IAM');
  });

  it("gives each function's role exactly its route's DynamoDB actions on the table ARN", () => {
    const tableId = resourcesOfType(json, 'AWS::DynamoDB::Table')[0]?.[0];
    for (const id of FUNCTION_IDS) {
      const fn = json.Resources[assets.get(id)?.logicalId as string];
      const role = (fn?.Properties?.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const grants = statementsOfRole(json, { logicalId: role }).map((s) => ({ actions: actionsOf(s), resources: resourcesOf(s) }));
      expect(grants).toEqual(
        id === 'fallback' ? [] : [{ actions: [...TABLE_ACTIONS_BY_ROUTE[id]], resources: [`{${tableId}.Arn}`] }],
      );
    }
  });

  it('retains the lease table, with point-in-time recovery, on-demand billing and TTL on expireItemAt', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'expireItemAt', Enabled: true },
        DeletionProtectionEnabled: true,
      },
    });
  });

  it('throttles the $default stage at the default 200 requests/s, burst 400', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      DefaultRouteSettings: { ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 },
    });
  });

  it('sends all six alarms to the SNS topic given as context', () => {
    template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { AlarmActions: [ALARM_TOPIC_ARN], OKActions: [ALARM_TOPIC_ARN] }, 6);
  });

  it("limits team A's task role to lease names under team-a. and leaves list out", () => {
    expect(invokeArnsOfRole(json, { roleName: 'team-a-tasks' })).toEqual(
      ROUTES.filter((r) => r.path.includes('{name}'))
        .map((r) => `${API_ARN}/${r.method}${r.path.replace('{name}', 'team-a.*')}`)
        .sort(),
    );
  });

  it('lets the dashboard role describe and list only', () => {
    expect(invokeArnsOfRole(json, { roleName: 'dashboard' })).toEqual([`${API_ARN}/GET/v1/leases`, `${API_ARN}/GET/v1/leases/*`]);
  });

  it('outputs the API URL and the table name', () => {
    expect(Object.keys(json.Outputs ?? {}).sort()).toEqual(['ApiUrl', 'TableName']);
  });
});

describe('the bundled functions', () => {
  it('are one ESM file per function with its source map, loaded by Lambda as index.handler', () => {
    expect([...assets.keys()].sort()).toEqual([...FUNCTION_IDS].sort());
    for (const asset of assets.values()) {
      expect(asset.handler).toBe('index.handler');
      const code = readFileSync(join(asset.directory, 'index.mjs'), 'utf8');
      expect(code.startsWith("import { createRequire } from 'module'; const require = createRequire(import.meta.url);")).toBe(true);
      expect(code.trimEnd().endsWith('//# sourceMappingURL=index.mjs.map')).toBe(true);
      expect(existsSync(join(asset.directory, 'index.mjs.map'))).toBe(true);
    }
  });

  it('import nothing but Node built-ins: the AWS SDK and every other package are inside the bundle', async () => {
    const builtins = new Set(builtinModules);
    for (const asset of assets.values()) {
      // esbuild re-reads the bundle and reports every import it keeps; a package import would not
      // resolve at all, since the assembly lives in a temp folder with no node_modules above it.
      const analysis = await build({
        entryPoints: [join(asset.directory, 'index.mjs')],
        bundle: true,
        write: false,
        platform: 'node',
        format: 'esm',
        metafile: true,
        logLevel: 'silent',
      });
      const kept = Object.values(analysis.metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external).map((i) => i.path));
      expect(kept.filter((path) => !builtins.has(path.replace(/^node:/, '')))).toEqual([]);
    }
  });

  it('stay within their size budgets (printed here, recorded in docs/deploy.md)', () => {
    const rows = FUNCTION_IDS.map((id) => {
      const directory = assets.get(id)?.directory as string;
      const bytes = statSync(join(directory, 'index.mjs')).size;
      const mapBytes = statSync(join(directory, 'index.mjs.map')).size;
      return { id, bytes, mapBytes };
    });
    console.log(
      ['bundle sizes (index.mjs, minified ESM; source map alongside):']
        .concat(rows.map((r) => `  ${r.id.padEnd(9)} ${String(r.bytes).padStart(8)} bytes  ${(r.bytes / 1024).toFixed(1).padStart(6)} KiB   map ${(r.mapBytes / 1024).toFixed(1)} KiB`))
        .join('\n'),
    );
    for (const row of rows) {
      expect(row.bytes).toBeLessThanOrEqual(row.id === 'fallback' ? BUNDLE_BUDGET_BYTES.fallback : BUNDLE_BUDGET_BYTES.route);
    }
  });
});

// ---- invoking the bundles -------------------------------------------------------------------

type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
/** Invokes one function and returns its result with what it wrote to stdout/stderr. */
type Invoker = (id: FunctionId, event: APIGatewayProxyEventV2) => Promise<{ value: APIGatewayProxyStructuredResultV2; output: string }>;

/**
 * The bundles run in their own plain Node process (lambda-runner.mjs), not in Vitest's: Vitest would
 * transform the file on the way in, and the point is to load it exactly as Lambda's Node runtime
 * does (native ESM loader, `import.meta.url`, `createRequire`, `--enable-source-maps`), from the
 * cloud assembly in a temp folder with no node_modules above it.
 */
class BundleRunner {
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

  async load(id: FunctionId, file: string): Promise<void> {
    await this.request({ type: 'load', id, url: pathToFileURL(file).href, functionName: `leasehold-${id}` });
  }

  readonly invoke: Invoker = async (id, event) => {
    const reply = await this.request({ type: 'invoke', id, event });
    return { value: reply.result as APIGatewayProxyStructuredResultV2, output: reply.output ?? '' };
  };

  stop(): void {
    this.child.kill();
  }
}

interface RunnerReply {
  seq?: number;
  ok: boolean;
  result?: unknown;
  output?: string;
  error?: string;
}

const savedEnv = { ...process.env };
let runner: BundleRunner | undefined;
let bundled: Invoker;
let source: Invoker;

beforeAll(async () => {
  const [bundleTable, sourceTable] = await Promise.all([createTestLeaseTable('bundle'), createTestLeaseTable('source')]);
  const lambdaLikeEnv = {
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
    POWERTOOLS_SERVICE_NAME: 'leasehold',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  };

  // As in the template: the function's environment, plus what Lambda itself sets.
  const bundleEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    NODE_OPTIONS: '--enable-source-maps',
    ...lambdaLikeEnv,
    LEASE_TABLE_NAME: bundleTable.tableName,
  };
  runner = await BundleRunner.start(bundleEnv, workDir);
  for (const id of FUNCTION_IDS) await runner.load(id, join(assets.get(id)?.directory as string, 'index.mjs'));
  bundled = runner.invoke;

  // The source handlers, in this process, build their dependencies on first use from the environment.
  Object.assign(process.env, lambdaLikeEnv, { LEASE_TABLE_NAME: sourceTable.tableName });
  delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  delete process.env.POWERTOOLS_METRICS_DISABLED;
  delete process.env.POWERTOOLS_DEV;
  const handlers = {} as Record<FunctionId, Handler>;
  for (const id of FUNCTION_IDS) {
    handlers[id] = ((await import(`../../functions/handlers/${id}.ts`)) as { handler: Handler }).handler;
  }
  source = (id, event) => captured(() => handlers[id](event, lambdaContext(id)));
}, 120_000);

afterAll(() => {
  runner?.stop();
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Names of the metrics the invocation published as EMF on stdout. */
  metrics: string[];
}

interface Request {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  query?: Record<string, string>;
}

/** Finds the route (and `{name}`) the way API Gateway would, or `$default`. */
function routeFor(method: string, path: string): { id: FunctionId; routeKey: string; pathParameters?: Record<string, string> } {
  for (const route of ROUTES) {
    const pattern = new RegExp(`^${route.path.replace('{name}', '(?<name>[^/]+)')}$`);
    const match = pattern.exec(path);
    if (match && route.method === method) {
      const name = match.groups?.name;
      return { id: route.id, routeKey: `${route.method} ${route.path}`, ...(name ? { pathParameters: { name } } : {}) };
    }
  }
  return { id: 'fallback', routeKey: '$default' };
}

function apiEvent(request: Request, routeKey: string, pathParameters?: Record<string, string>): APIGatewayProxyEventV2 {
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

function lambdaContext(id: FunctionId): Context {
  const functionName = `leasehold-${id}`;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2026/01/01/[$LATEST]0123456789abcdef',
    getRemainingTimeInMillis: () => 5_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** Runs `fn` with stdout and stderr captured (Powertools writes EMF and warnings straight to them). */
async function captured<T>(fn: () => Promise<T>): Promise<{ value: T; output: string }> {
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

function emfMetricNames(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"_aws"'))
    .flatMap((line) => {
      const record = JSON.parse(line) as { _aws: { CloudWatchMetrics: Array<{ Metrics: Array<{ Name: string }> }> } };
      return record._aws.CloudWatchMetrics.flatMap((m) => m.Metrics.map((metric) => metric.Name));
    })
    .sort();
}

async function invoke(invoker: Invoker, request: Request): Promise<Answer> {
  const { id, routeKey, pathParameters } = routeFor(request.method, request.path);
  const { value, output } = await invoker(id, apiEvent(request, routeKey, pathParameters));
  const headers = Object.fromEntries(Object.entries(value.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
  return {
    status: value.statusCode ?? 200,
    headers,
    body: value.body === undefined ? undefined : JSON.parse(value.body),
    metrics: emfMetricNames(output),
  };
}

const VOLATILE_FIELDS = new Set(['token', 'leaseId', 'expiresAt', 'acquiredAt', 'renewedAt', 'remainingMs', 'retryAfterMs', 'reservedUntil']);

/**
 * An answer with what legitimately differs between two tables and two instants masked: tokens,
 * lease ids, times and every digit inside messages. Status, headers, codes, holders, names and the
 * exact shape of every body remain.
 */
function comparable(answer: Answer): unknown {
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
  return { status: answer.status, headers, body: mask(answer.body), metrics: answer.metrics };
}

type Scenario = (call: (request: Request) => Promise<Answer>) => Promise<Answer[]>;

/** Plays the same requests against the bundles and the source handlers (each on its own table). */
async function sideBySide(scenario: Scenario): Promise<{ bundle: Answer[]; source: Answer[] }> {
  const bundle = await scenario((request) => invoke(bundled, request));
  const fromSource = await scenario((request) => invoke(source, request));
  expect(bundle.map(comparable)).toEqual(fromSource.map(comparable));
  return { bundle, source: fromSource };
}

const acquire = (name: string, body: unknown): Request => ({ method: 'POST', path: `/v1/leases/${name}/acquire`, body });
const post = (name: string, op: string, body: unknown): Request => ({ method: 'POST', path: `/v1/leases/${name}/${op}`, body });

describe('the bundled handlers answer exactly as the source handlers do', () => {
  it('acquire: 200 with the grant', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call(acquire('infra.acquire', { holder: 'worker-a', ttlMs: 15_000, metadata: { addr: '10.0.0.7' } })),
    ]);
    expect(bundle[0]?.status).toBe(200);
    expect(bundle[0]?.body.lease).toMatchObject({ name: 'infra.acquire', holder: 'worker-a', ttlMs: 15_000, metadata: { addr: '10.0.0.7' } });
    expect(bundle[0]?.body.lease.leaseId).toMatch(/^[0-9a-f]{32}$/);
    expect(bundle[0]?.metrics).toEqual(['acquired']);
  });

  it('acquire of a held lease: 409 LEASE_HELD with Retry-After', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call(acquire('infra.held', { holder: 'worker-a', ttlMs: 15_000 })),
      await call(acquire('infra.held', { holder: 'worker-b', ttlMs: 15_000 })),
    ]);
    expect(bundle[1]?.status).toBe(409);
    expect(bundle[1]?.body.error).toMatchObject({ code: 'LEASE_HELD', lease: { holder: 'worker-a' } });
    expect(bundle[1]?.headers['retry-after']).toMatch(/^\d+$/);
  });

  it('acquire with a bad body: 400 VALIDATION_ERROR, 400 for broken JSON, 415 for another content type', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call(acquire('infra.invalid', { holder: 'worker-a', ttlMs: 5 })),
      await call({ method: 'POST', path: '/v1/leases/infra.invalid/acquire', rawBody: '{"holder":' }),
      await call({ method: 'POST', path: '/v1/leases/infra.invalid/acquire', rawBody: 'holder=a', contentType: 'text/plain' }),
    ]);
    expect(bundle.map((a) => a.status)).toEqual([400, 400, 415]);
    expect(bundle[0]?.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'ttlMs' });
  });

  it('renew: 200 with the same token; with a wrong token, 409 LEASE_LOST', async () => {
    const { bundle } = await sideBySide(async (call) => {
      const granted = await call(acquire('infra.renew', { holder: 'worker-a', ttlMs: 15_000 }));
      const { leaseId, token } = granted.body.lease;
      return [
        granted,
        await call(post('infra.renew', 'renew', { leaseId, token, ttlMs: 20_000 })),
        await call(post('infra.renew', 'renew', { leaseId, token: token + 1 })),
      ];
    });
    expect(bundle.map((a) => a.status)).toEqual([200, 200, 409]);
    expect(bundle[1]?.body.lease).toMatchObject({ token: bundle[0]?.body.lease.token, ttlMs: 20_000 });
    expect(bundle[2]?.body.error.code).toBe('LEASE_LOST');
  });

  it('release: 200 released, and 200 again for the same grant', async () => {
    const { bundle } = await sideBySide(async (call) => {
      const granted = await call(acquire('infra.release', { holder: 'worker-a', ttlMs: 15_000 }));
      const { leaseId, token } = granted.body.lease;
      return [granted, await call(post('infra.release', 'release', { leaseId, token })), await call(post('infra.release', 'release', { leaseId, token }))];
    });
    expect(bundle.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(bundle[1]?.body).toMatchObject({ released: true, lease: { name: 'infra.release', holder: null } });
  });

  it('handoff: 200 handedOff to the named holder', async () => {
    const { bundle } = await sideBySide(async (call) => {
      const granted = await call(acquire('infra.handoff', { holder: 'worker-a', ttlMs: 15_000 }));
      const { leaseId, token } = granted.body.lease;
      return [granted, await call(post('infra.handoff', 'handoff', { leaseId, token, to: 'worker-b' }))];
    });
    expect(bundle[1]?.status).toBe(200);
    expect(bundle[1]?.body).toMatchObject({ handedOff: true, to: 'worker-b' });
  });

  it('describe: 200 with the public lease (no leaseId); 404 LEASE_NOT_FOUND for an unknown name', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call(acquire('infra.describe', { holder: 'worker-a', ttlMs: 15_000 })),
      await call({ method: 'GET', path: '/v1/leases/infra.describe' }),
      await call({ method: 'GET', path: '/v1/leases/infra.never-acquired' }),
    ]);
    expect(bundle.map((a) => a.status)).toEqual([200, 200, 404]);
    expect(bundle[1]?.body.lease).toMatchObject({ name: 'infra.describe', holder: 'worker-a' });
    expect(bundle[1]?.body.lease).not.toHaveProperty('leaseId');
    expect(bundle[2]?.body.error.code).toBe('LEASE_NOT_FOUND');
  });

  it('list: 200 with the leases under a prefix', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call(acquire('infra-list.a', { holder: 'worker-a', ttlMs: 15_000 })),
      await call(acquire('infra-list.b', { holder: 'worker-b', ttlMs: 15_000 })),
      await call({ method: 'GET', path: '/v1/leases', query: { prefix: 'infra-list.' } }),
    ]);
    expect(bundle[2]?.status).toBe(200);
    expect(bundle[2]?.body.leases.map((l: { name: string }) => l.name)).toEqual(['infra-list.a', 'infra-list.b']);
  });

  it('the $default fallback: 404 ROUTE_NOT_FOUND for an unknown path, 405 with Allow for a wrong method', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call({ method: 'GET', path: '/v2/leases' }),
      await call({ method: 'PUT', path: '/v1/leases/infra.x/acquire' }),
    ]);
    expect(bundle.map((a) => a.status)).toEqual([404, 405]);
    expect(bundle[0]?.body.error.code).toBe('ROUTE_NOT_FOUND');
    expect(bundle[1]?.headers.allow).toBe('POST');
  });
});
