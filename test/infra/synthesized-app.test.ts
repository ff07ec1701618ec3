import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsCustomResource } from 'aws-cdk-lib/custom-resources';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { ADMIN_ROUTE_IDS, ROUTES } from '../../client/src/protocol/index.js';
import { defaultSemaphoreTableName } from '../../functions/config.js';
import { ensureSemaphoreTable, ensureSubscriptionTable } from '../../functions/lease-table.js';
import { WATCH_GRANTS_PARTITION } from '../../functions/watch/watch-grants.js';
import { SEMAPHORE_ROUTE_IDS, TABLE_ACTIONS_BY_ROUTE, type FunctionId } from '../../infra/lease-service.js';
import { WATCH_FUNCTION_IDS, WATCH_STAGE_NAME, type WatchFunctionId } from '../../infra/lease-watch.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';
import {
  ACCOUNT,
  REGION,
  actionsOf,
  cdkSynth,
  functionAssets,
  invokeArnsOfRole,
  isFunctionOf,
  leaseTableId,
  semaphoreTableId,
  subscriptionTableIdOf,
  readTemplate,
  resourcesOf,
  statementsOfRole,
  type CfnTemplate,
  type FunctionAsset,
} from './synth-support.js';
import { lambdaContext } from '../../local/lambda-context.js';
import {
  BundleRunner,
  bundleContextOptions,
  ManagementApiRecorder,
  captured,
  comparable,
  invoke,
  leaseItem,
  publishedGrantCalls,
  socketEvent,
  streamEvent,
  type Answer,
  type AnyFunctionId,
  type Handler,
  type Invoker,
  type Request,
} from './bundle-support.js';

/**
 * The deployable artefact, end to end: the real `cdk synth` (pinned CLI, offline) writes the cloud
 * assembly that `cdk deploy` would upload; the template is checked with aws-cdk-lib/assertions, and
 * each function's bundled `index.mjs` is loaded by Node's own ESM loader in a separate plain Node
 * process (lambda-runner.mjs), from a folder with no node_modules above it, and invoked side by
 * side with the source handlers against DynamoDB Local: the route functions with API Gateway v2
 * events, the watch functions with WebSocket events and DynamoDB stream events, their posts to
 * connections going to a small recording stand-in for the API Gateway management API.
 */

const STACK = 'Leasehold';
const ALARM_TOPIC_ARN = `arn:aws:sns:${REGION}:${ACCOUNT}:leasehold-alarms`;
const API_ARN = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{api}/$default`;
const WATCH_ARN = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{watch}/${WATCH_STAGE_NAME}`;
const FUNCTION_IDS: FunctionId[] = [...ROUTES.map((r) => r.id), 'fallback'];
/** Granted in the synthesized app: team A (a role with a path) for names under `team-a.`, the dashboard for all. */
const TEAM_A_ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`;
const DASHBOARD_ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/dashboard`;
/** How API Gateway reports those roles' callers on $connect: assumed-role sessions, without the role's path. */
const TEAM_A_CALLER = `arn:aws:sts::${ACCOUNT}:assumed-role/team-a-tasks/i-0123456789abcdef0`;
const DASHBOARD_CALLER = `arn:aws:sts::${ACCOUNT}:assumed-role/dashboard/grafana`;
const ALL_FUNCTION_IDS: AnyFunctionId[] = [...FUNCTION_IDS, ...WATCH_FUNCTION_IDS];
/** Bundle size budgets (bytes of index.mjs). Raising one is a decision: record it in docs/deploy.md ("Bundle sizes"). */
const CUSTOM_RESOURCE_PROVIDER_PREFIX = `AWS${AwsCustomResource.PROVIDER_FUNCTION_UUID.replaceAll('-', '')}`;
const BUNDLE_BUDGET_BYTES = { route: 450 * 1024, fallback: 16 * 1024, watch: 420 * 1024 };

function budgetOf(id: AnyFunctionId): number {
  if (id === 'fallback') return BUNDLE_BUDGET_BYTES.fallback;
  return id.startsWith('watch-') ? BUNDLE_BUDGET_BYTES.watch : BUNDLE_BUDGET_BYTES.route;
}

let workDir: string;
let outDir: string;
let json: CfnTemplate;
let template: Template;
let assets: Map<AnyFunctionId, FunctionAsset>;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'leasehold-synth-'));
  outDir = join(workDir, 'cdk.out');
  await cdkSynth({
    outDir,
    cdkHome: join(workDir, 'cdk-home'),
    context: {
      'leasehold:alarmTopicArn': ALARM_TOPIC_ARN,
      'leasehold:grants': JSON.stringify([
        { roleArn: TEAM_A_ROLE_ARN, namePrefix: 'team-a.' },
        { roleArn: DASHBOARD_ROLE_ARN, access: 'read' },
      ]),
    },
  });
  json = readTemplate(outDir, STACK);
  template = Template.fromJSON(json as unknown as Record<string, unknown>);
  assets = new Map(
    functionAssets(outDir, STACK)
      // aws-cdk-lib's own AwsCustomResource provider (writing the watch grants at deploy time) is not ours to bundle.
      .filter((asset) => !asset.logicalId.startsWith(CUSTOM_RESOURCE_PROVIDER_PREFIX))
      .map((asset) => {
        const id = ALL_FUNCTION_IDS.find((candidate) => isFunctionOf(asset.logicalId, candidate));
        if (id === undefined) throw new Error(`unexpected function ${asset.logicalId} in the cloud assembly`);
        return [id, asset];
      }),
  );
}, 300_000);

afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

// The construct's own settings (IAM on every route, throttling, outputs, the stream mapping) are
// checked in lease-service.test.ts; here, what the app's synthesis adds: grants, alarms, bundles.
describe('cdk synth (pinned CLI, offline)', () => {
  it("gives each watch function's role only DynamoDB actions on the subscriptions table (or the lease stream) and ManageConnections", () => {
    const tableId = leaseTableId(json);
    for (const id of WATCH_FUNCTION_IDS) {
      const fn = json.Resources[assets.get(id)?.logicalId as string];
      const role = (fn!.Properties!.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const statements = statementsOfRole(json, { logicalId: role }).filter((s) => !actionsOf(s).every((a) => a.startsWith('logs:')));
      for (const statement of statements) {
        const onLeaseTable = resourcesOf(statement).filter((arn) => arn.includes(`{${tableId}.`));
        expect(onLeaseTable.every((arn) => arn === `{${tableId}.StreamArn}`)).toBe(true);
        expect(actionsOf(statement).every((a) => a.startsWith('dynamodb:') || a === 'execute-api:ManageConnections')).toBe(true);
      }
    }
  });

  it("gives each function's role exactly its route's DynamoDB actions on its table's ARN", () => {
    const leaseTable = leaseTableId(json);
    for (const id of FUNCTION_IDS) {
      const fn = json.Resources[assets.get(id)?.logicalId as string];
      const role = (fn!.Properties!.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      // Besides its table, a route that pushes to watchers reaches the watch (test/infra/watch-direct-push.test.ts).
      const grants = statementsOfRole(json, { logicalId: role })
        .filter((s) => !actionsOf(s).every((a) => a.startsWith('logs:')))
        .filter((s) => !resourcesOf(s).some((arn) => arn.includes(subscriptionTableIdOf(json) as string) || arn.startsWith('arn:aws:execute-api')))
        .map((s) => ({ actions: actionsOf(s), resources: resourcesOf(s) }));
      if (id === 'fallback') {
        expect(grants).toEqual([]);
        continue;
      }
      const table = `{${SEMAPHORE_ROUTE_IDS.has(id) ? semaphoreTableId(json) : leaseTable}.Arn}`;
      // A group read also queries the table's group index.
      const resources = id === 'group-describe' ? [table, `${table}/index/group-index`] : [table];
      expect(grants).toEqual([{ actions: [...TABLE_ACTIONS_BY_ROUTE[id]], resources }]);
    }
  });

  it('retains the lease table, with point-in-time recovery, on-demand billing, TTL on expireItemAt and a stream of both images', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'leaseGroup', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'expireItemAt', Enabled: true },
        DeletionProtectionEnabled: true,
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      },
    });
  });

  it('sends every alarm to the SNS topic given as context', () => {
    template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { AlarmActions: [ALARM_TOPIC_ARN], OKActions: [ALARM_TOPIC_ARN] }, 13);
  });

  it("limits team A's task role to lease names under team-a., with the watch (scoped there) and without list", () => {
    expect(invokeArnsOfRole(json, { roleName: 'team-a-tasks' })).toEqual(
      [
        ...ROUTES.filter((r) => /\{(name|prefix|group)\}/.test(r.path) && !ADMIN_ROUTE_IDS.has(r.id)).map(
          (r) => `${API_ARN}/${r.method}${r.path.replace(/\{(name|prefix|group)\}/, 'team-a.*')}`,
        ),
        // The group the prefix names: its leases are exactly the names under team-a.
        `${API_ARN}/GET/v1/groups/team-a`,
        `${WATCH_ARN}/$connect`,
      ].sort(),
    );
  });

  it('lets the dashboard role describe (leases, groups, semaphores and rwlocks), list and open the watch only', () => {
    expect(invokeArnsOfRole(json, { roleName: 'dashboard' })).toEqual(
      [`${API_ARN}/GET/v1/leases`, `${API_ARN}/GET/v1/leases/*`, `${API_ARN}/GET/v1/groups/*`, `${API_ARN}/GET/v1/semaphores/*`, `${API_ARN}/GET/v1/rwlocks/*`, `${WATCH_ARN}/$connect`].sort(),
    );
  });

});

describe('the bundled functions', () => {
  it('are one ESM file per function with its source map, loaded by Lambda as index.handler', () => {
    expect([...assets.keys()].sort()).toEqual([...ALL_FUNCTION_IDS].sort());
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
    const rows = ALL_FUNCTION_IDS.map((id) => {
      const directory = assets.get(id)?.directory as string;
      const bytes = statSync(join(directory, 'index.mjs')).size;
      const mapBytes = statSync(join(directory, 'index.mjs.map')).size;
      return { id, bytes, mapBytes };
    });
    console.log(
      ['bundle sizes (index.mjs, minified ESM; source map alongside):']
        .concat(rows.map((r) => `  ${r.id.padEnd(16)} ${String(r.bytes).padStart(8)} bytes  ${(r.bytes / 1024).toFixed(1).padStart(6)} KiB   map ${(r.mapBytes / 1024).toFixed(1)} KiB`))
        .join('\n'),
    );
    for (const row of rows) expect(row.bytes).toBeLessThanOrEqual(budgetOf(row.id));
  });
});

// ---- invoking the bundles: see bundle-support.ts

const savedEnv = { ...process.env };
let runner: BundleRunner | undefined;
let bundled: Invoker;
let source: Invoker;
let management: ManagementApiRecorder;
/** Each side's subscriptions table, for reading what the watch functions stored. */
let subscriptionTables: Record<'bundle' | 'source', string>;

beforeAll(async () => {
  const [bundleTable, sourceTable] = await Promise.all([createTestLeaseTable('bundle'), createTestLeaseTable('source')]);
  // The semaphore routes use the lease table's name with `-semaphores` unless told otherwise.
  await Promise.all([bundleTable, sourceTable].map((t) => ensureSemaphoreTable(t.raw, defaultSemaphoreTableName(t.tableName))));
  management = await ManagementApiRecorder.start();
  const raw = new DynamoDBClient(localDynamoConfig());
  subscriptionTables = { bundle: `subscriptions-bundle-${randomUUID()}`, source: `subscriptions-source-${randomUUID()}` };
  await Promise.all(Object.values(subscriptionTables).map((name) => ensureSubscriptionTable(raw, name)));
  // The watch grants, as the template's custom resources write them at deploy time, plus more
  // grants than a Lambda environment (4 KB) could hold. Before any $connect: a function reads
  // the grants once and keeps them for a minute.
  for (const tableName of Object.values(subscriptionTables)) {
    for (const call of publishedGrantCalls(json, tableName)) await raw.send(new PutItemCommand(call));
    for (let i = 0; i < EXTRA_GRANTS; i++) {
      await raw.send(
        new PutItemCommand({
          TableName: tableName,
          Item: {
            pk: { S: WATCH_GRANTS_PARTITION },
            sk: { S: `LeaseholdExtraRole${i}` },
            principalArn: { S: `arn:aws:iam::${ACCOUNT}:role/platform/batch/extra-team-${i}-tasks` },
            prefixes: { L: [{ S: `extra-team-${i}.` }, { S: `extra-shared-${i}.` }] },
          },
        }),
      );
    }
  }
  raw.destroy();
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
    SUBSCRIPTION_TABLE_NAME: subscriptionTables.bundle,
    WEBSOCKET_MANAGEMENT_ENDPOINT: management.endpoint('bundle'),
  };
  runner = await BundleRunner.start(bundleEnv, workDir);
  for (const id of ALL_FUNCTION_IDS) await runner.load(id, join(assets.get(id)?.directory as string, 'index.mjs'));
  bundled = runner.invoke;

  // The source handlers, in this process, build their dependencies on first use from the environment.
  Object.assign(process.env, lambdaLikeEnv, {
    LEASE_TABLE_NAME: sourceTable.tableName,
    SUBSCRIPTION_TABLE_NAME: subscriptionTables.source,
    WEBSOCKET_MANAGEMENT_ENDPOINT: management.endpoint('source'),
  });
  delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  delete process.env.POWERTOOLS_METRICS_DISABLED;
  delete process.env.POWERTOOLS_DEV;
  const handlers = {} as Record<AnyFunctionId, Handler>;
  for (const id of ALL_FUNCTION_IDS) {
    handlers[id] = ((await import(`../../functions/handlers/${id}.ts`)) as { handler: Handler }).handler;
  }
  source = (id, event) => captured(() => handlers[id](
      event,
      lambdaContext(bundleContextOptions(id)),
    ));
}, 120_000);

afterAll(async () => {
  runner?.stop();
  await management?.close();
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});

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

  it('semaphores: acquire 200 with the permit, 409 SEMAPHORE_FULL with Retry-After, renew, release, describe', async () => {
    const sem = (op: string, body?: unknown): Request =>
      op === 'describe' ? { method: 'GET', path: '/v1/semaphores/infra.sem' } : { method: 'POST', path: `/v1/semaphores/infra.sem/${op}`, body };
    const { bundle } = await sideBySide(async (call) => {
      const acquired = await call(sem('acquire', { holder: 'worker-a', ttlMs: 15_000, limit: 1 }));
      const full = await call(sem('acquire', { holder: 'worker-b', ttlMs: 15_000, limit: 1 }));
      const { permitId, token } = acquired.body.permit as { permitId: string; token: number };
      return [acquired, full, await call(sem('renew', { permitId, token })), await call(sem('release', { permitId, token })), await call(sem('describe'))];
    });
    expect(bundle.map((a) => a.status)).toEqual([200, 409, 200, 200, 200]);
    expect(bundle[0]?.body.permit).toMatchObject({ name: 'infra.sem', holder: 'worker-a', limit: 1 });
    expect(bundle[1]?.body.error.code).toBe('SEMAPHORE_FULL');
    expect(bundle[1]?.headers['retry-after']).toMatch(/^1[56]$/);
    expect(bundle[4]?.body.semaphore).toEqual({ name: 'infra.sem', limit: 1, available: 1, holders: [] });
    expect(bundle.flatMap((a) => a.metrics)).toEqual(['permitAcquired', 'rejected.SEMAPHORE_FULL', 'semaphoreFull', 'permitRenewed', 'permitReleased', 'semaphoreDescribed']);
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

  it('acquire with a bad body: 400 VALIDATION_ERROR, 400 for broken JSON, 415 for another content type or a charset other than UTF-8', async () => {
    const { bundle } = await sideBySide(async (call) => [
      await call(acquire('infra.invalid', { holder: 'worker-a', ttlMs: 5 })),
      await call({ method: 'POST', path: '/v1/leases/infra.invalid/acquire', rawBody: '{"holder":' }),
      await call({ method: 'POST', path: '/v1/leases/infra.invalid/acquire', rawBody: 'holder=a', contentType: 'text/plain' }),
      await call({
        method: 'POST',
        path: '/v1/leases/infra.invalid/acquire',
        rawBody: '{"holder":"worker-a","ttlMs":5000}',
        contentType: 'application/json; charset=utf-16',
      }),
    ]);
    expect(bundle.map((a) => a.status)).toEqual([400, 400, 415, 415]);
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

// ---- the watch bundles ------------------------------------------------------------------------

type Side = 'bundle' | 'source';

/** A post to a connection as both sides must make it: the recorder's view without side and signature. */
interface Post {
  method: string;
  connectionId: string;
  body: unknown;
}

/** One side of a watch scenario: its invoker, and its calls to the management API since the scenario began. */
interface WatchSide {
  side: Side;
  invoke(id: WatchFunctionId, event: unknown): Promise<unknown>;
  /** The posts made since the scenario began, or since `mark` was taken; sorted by connection id. */
  posts(mark?: number): Post[];
  /** A mark for `posts`: the number of posts made so far. */
  mark(): number;
  /** The items of a connection in this side's table, its recorded scope included (`expireAt` masked). */
  subscriptionsOf(connectionId: string): Promise<Array<Record<string, unknown>>>;
  /** Opens a connection as API Gateway would after IAM auth: `$connect` with the caller's ARN. */
  connect(connectionId: string, callerArn?: string): Promise<unknown>;
}

const subscriptionReader = createDocumentClient(localDynamoConfig());

function watchSide(side: Side): WatchSide {
  const invoker = side === 'bundle' ? bundled : source;
  const from = management.calls.length;
  return {
    side,
    invoke: async (id, event) => (await invoker(id, event)).value,
    posts: (mark = 0) =>
      management
        .callsOf(side, from)
        .slice(mark)
        .map(({ method, connectionId, body }) => ({ method, connectionId, body }))
        .sort((a, b) => a.connectionId.localeCompare(b.connectionId)),
    mark: () => management.callsOf(side, from).length,
    connect: async (connectionId, callerArn = DASHBOARD_CALLER) =>
      (await invoker('watch-connect', socketEvent('$connect', connectionId, undefined, callerArn))).value,
    async subscriptionsOf(connectionId) {
      const out = await subscriptionReader.send(
        new ScanCommand({
          TableName: subscriptionTables[side],
          FilterExpression: 'connectionId = :c',
          ExpressionAttributeValues: { ':c': connectionId },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? [])
        .map((item): Record<string, unknown> => ({ ...item, expireAt: typeof item.expireAt === 'number' ? '<epoch seconds>' : item.expireAt }))
        .sort((a, b) => `${String(a.pk)}|${String(a.sk)}`.localeCompare(`${String(b.pk)}|${String(b.sk)}`));
    },
  };
}

/** Plays the same watch scenario against the bundles and the source handlers; what each observes must be equal. */
async function watchSideBySide<T>(scenario: (side: WatchSide) => Promise<T>): Promise<{ bundle: T; source: T }> {
  const bundle = await scenario(watchSide('bundle'));
  const fromSource = await scenario(watchSide('source'));
  expect(bundle).toEqual(fromSource);
  return { bundle, source: fromSource };
}

/** A connection's items without the scope `$connect` records. */
function withoutScope(items: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return items.filter((item) => !String(item.pk).startsWith('connection#'));
}

/** Grant items written next to the template's own, by role number: far more than 4 KB in all. */
const EXTRA_GRANTS = 80;

describe('the bundled watch functions behave exactly as the source handlers do', () => {
  it("$connect of a granted caller (a session of a role whose ARN has a path): 200, the grant's prefixes recorded for the connection, no post", async () => {
    const connectionId = 'cOnNeCt0Aa1=';
    const { bundle } = await watchSideBySide(async (w) => ({
      result: await w.connect(connectionId, TEAM_A_CALLER),
      posts: w.posts(),
      items: await w.subscriptionsOf(connectionId),
    }));
    expect(bundle).toEqual({
      result: { statusCode: 200 },
      posts: [],
      items: [{ pk: `connection#${connectionId}`, sk: 'scope', connectionId, prefixes: ['team-a.'], principal: `aws:${ACCOUNT}:role/team-a-tasks`, expireAt: '<epoch seconds>' }],
    });
  });

  it('$connect of a caller with no watch grant (another role, or no identity at all): 403, nothing recorded', async () => {
    const { bundle } = await watchSideBySide(async (w) => ({
      otherRole: await w.connect('nOgRaNt0Aa1=', `arn:aws:sts::${ACCOUNT}:assumed-role/team-b-tasks/i-0123`),
      otherAccount: await w.connect('nOgRaNt0Aa2=', `arn:aws:sts::210987654321:assumed-role/team-a-tasks/i-0123`),
      anonymous: await w.invoke('watch-connect', socketEvent('$connect', 'nOgRaNt0Aa3=')),
      items: [
        ...(await w.subscriptionsOf('nOgRaNt0Aa1=')),
        ...(await w.subscriptionsOf('nOgRaNt0Aa2=')),
        ...(await w.subscriptionsOf('nOgRaNt0Aa3=')),
      ],
    }));
    expect(bundle).toEqual({ otherRole: { statusCode: 403 }, otherAccount: { statusCode: 403 }, anonymous: { statusCode: 403 }, items: [] });
  });

  it('$connect finds a grant among more grants than a 4 KB Lambda environment could hold', async () => {
    const connectionId = 'mAnYgRaNtS0Aa1=';
    const last = EXTRA_GRANTS - 1;
    const { bundle } = await watchSideBySide(async (w) => ({
      result: await w.connect(connectionId, `arn:aws:sts::${ACCOUNT}:assumed-role/extra-team-${last}-tasks/s`),
      prefixes: (await w.subscriptionsOf(connectionId)).map((item) => item.prefixes),
    }));
    expect(bundle).toEqual({ result: { statusCode: 200 }, prefixes: [[`extra-shared-${last}.`, `extra-team-${last}.`]] });
  });

  it("subscribe inside the caller's prefixes: stored and acknowledged", async () => {
    const connectionId = 'tEaMaIn0Aa1=';
    const { bundle } = await watchSideBySide(async (w) => {
      await w.connect(connectionId, TEAM_A_CALLER);
      await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: ['team-a.indexer'], prefixes: ['team-a.jobs.'] }));
      return { posts: w.posts(), items: withoutScope(await w.subscriptionsOf(connectionId)).map((item) => item.pk) };
    });
    // The name's and the prefix's subscription, and what the connection counts towards its principal's cap.
    expect(bundle).toEqual({
      posts: [{ method: 'POST', connectionId, body: { type: 'subscribed', names: ['team-a.indexer'], prefixes: ['team-a.jobs.'] } }],
      items: ['name#team-a.indexer', 'prefix#team-a.jobs.', `principal#aws:${ACCOUNT}:role/team-a-tasks`],
    });
  });

  it("subscribe to a name or a prefix outside the caller's prefixes: nothing stored, a FORBIDDEN reply", async () => {
    const byName = 'tEaMaOuT0Aa1=';
    const byPrefix = 'tEaMaOuT0Aa2=';
    const { bundle } = await watchSideBySide(async (w) => {
      await w.connect(byName, TEAM_A_CALLER);
      await w.connect(byPrefix, TEAM_A_CALLER);
      await w.invoke('watch-subscribe', socketEvent('subscribe', byName, { action: 'subscribe', names: ['team-a.ok', 'team-b.indexer'] }));
      await w.invoke('watch-subscribe', socketEvent('subscribe', byPrefix, { action: 'subscribe', prefixes: ['team-'] }));
      return {
        posts: w.posts(),
        items: [...withoutScope(await w.subscriptionsOf(byName)), ...withoutScope(await w.subscriptionsOf(byPrefix))],
      };
    });
    const forbidden = (connectionId: string, entry: string) => ({
      method: 'POST',
      connectionId,
      body: { type: 'error', error: { code: 'FORBIDDEN', message: expect.stringContaining(entry) } },
    });
    expect(bundle.items).toEqual([]);
    expect(bundle.posts).toEqual([forbidden(byName, 'names[1] "team-b.indexer"'), forbidden(byPrefix, 'prefixes[0] "team-"')]);
  });

  it('subscribe on a connection with no recorded grant: nothing stored, a FORBIDDEN reply', async () => {
    const connectionId = 'nOsCoPe0Aa1=';
    const { bundle } = await watchSideBySide(async (w) => {
      await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: ['team-a.x'] }));
      return { posts: w.posts(), items: await w.subscriptionsOf(connectionId) };
    });
    expect(bundle).toEqual({
      posts: [{ method: 'POST', connectionId, body: { type: 'error', error: { code: 'FORBIDDEN', message: expect.any(String) } } }],
      items: [],
    });
  });

  it('subscribe: stores one item per name and prefix and one towards its principal\'s cap, and posts `subscribed` to the connection', async () => {
    const connectionId = 'sUbScRiBe0Aa1=';
    const { bundle } = await watchSideBySide(async (w) => ({
      connected: await w.connect(connectionId),
      result: await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: ['infra-watch.a'], prefixes: ['infra-watch.'] })),
      posts: w.posts(),
      items: await w.subscriptionsOf(connectionId),
    }));
    expect(bundle.result).toEqual({ statusCode: 200 });
    expect(bundle.posts).toEqual([
      { method: 'POST', connectionId, body: { type: 'subscribed', names: ['infra-watch.a'], prefixes: ['infra-watch.'] } },
    ]);
    expect(withoutScope(bundle.items).map((item) => item.pk)).toEqual(['name#infra-watch.a', 'prefix#infra-watch.', `principal#aws:${ACCOUNT}:role/dashboard`]);
  });

  it('subscribe: signs its post to the management API with SigV4 for execute-api in the function region', async () => {
    await bundled('watch-connect', socketEvent('$connect', 'sIgNeD0Aa1=', undefined, DASHBOARD_CALLER));
    const from = management.calls.length;
    await bundled('watch-subscribe', socketEvent('subscribe', 'sIgNeD0Aa1=', { action: 'subscribe', names: ['infra-watch.signed'] }));
    const [call] = management.callsOf('bundle', from);
    expect(call?.authorization).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=local/\\d{8}/${REGION}/execute-api/aws4_request, `));
  });

  it('subscribe with an invalid name: stores nothing and posts a VALIDATION_ERROR reply', async () => {
    const connectionId = 'iNvAlId0Aa1=';
    const { bundle } = await watchSideBySide(async (w) => ({
      connected: await w.connect(connectionId),
      result: await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: ['bad/name'] })),
      posts: w.posts(),
      items: await w.subscriptionsOf(connectionId),
    }));
    expect(bundle.result).toEqual({ statusCode: 200 });
    expect(bundle.posts).toEqual([
      { method: 'POST', connectionId, body: { type: 'error', error: { code: 'VALIDATION_ERROR', message: expect.any(String), field: 'names[0]' } } },
    ]);
    expect(withoutScope(bundle.items)).toEqual([]);
  });

  it('$disconnect: removes every subscription of the connection and its recorded scope, found through the byConnection index', async () => {
    const connectionId = 'dIsCoNnEcT0Aa1=';
    const { bundle } = await watchSideBySide(async (w) => {
      await w.connect(connectionId);
      await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: ['infra-watch.d1', 'infra-watch.d2'], prefixes: ['infra-watch-d.'] }));
      const before = (await w.subscriptionsOf(connectionId)).length;
      const result = await w.invoke('watch-disconnect', socketEvent('$disconnect', connectionId));
      return { before, result, after: await w.subscriptionsOf(connectionId) };
    });
    // The scope, two names, one prefix and the principal's count.
    expect(bundle).toEqual({ before: 5, result: { statusCode: 200 }, after: [] });
  });

  it('stream: turns a grant into an acquired event, posted to the name and prefix subscribers, with no batch item failure', async () => {
    const direct = 'sTrEaMdIrEcT0Aa1=';
    const prefixed = 'sTrEaMpReFiX0Aa1=';
    const bystander = 'sTrEaMoThEr0Aa1=';
    const name = 'infra-stream.job';
    const { bundle } = await watchSideBySide(async (w) => {
      for (const connectionId of [direct, prefixed, bystander]) await w.connect(connectionId);
      await w.invoke('watch-subscribe', socketEvent('subscribe', direct, { action: 'subscribe', names: [name] }));
      await w.invoke('watch-subscribe', socketEvent('subscribe', prefixed, { action: 'subscribe', prefixes: ['infra-stream.'] }));
      await w.invoke('watch-subscribe', socketEvent('subscribe', bystander, { action: 'subscribe', names: ['infra-stream.other'] }));
      const mark = w.mark();
      const result = await w.invoke('watch-stream', streamEvent({ newItem: leaseItem(name, { holder: 'worker-a' }) }));
      return { result, posts: w.posts(mark) };
    });
    expect(bundle.result).toEqual({ batchItemFailures: [] });
    const event = {
      type: 'acquired',
      name,
      holder: 'worker-a',
      token: 1_767_225_600_000_001,
      expiresAt: 1_767_225_615_000,
      priority: 0,
      metadata: null,
      atMs: 1_767_225_600_000,
    };
    expect(bundle.posts).toEqual(
      [direct, prefixed].map((connectionId) => ({ method: 'POST', connectionId, body: { type: 'event', event } })).sort((a, b) => a.connectionId.localeCompare(b.connectionId)),
    );
  });

  it('stream: turns a release into a released event naming the previous holder', async () => {
    const connectionId = 'rElEaSe0Aa1=';
    const name = 'infra-release.job';
    const held = leaseItem(name, { holder: 'worker-a' });
    const { bundle } = await watchSideBySide(async (w) => {
      await w.connect(connectionId);
      await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: [name] }));
      const mark = w.mark();
      const { holder: _holder, ...released } = held;
      await w.invoke('watch-stream', streamEvent({ oldItem: held, newItem: { ...released, releasedAt: 1_767_225_605_000, availableAt: 1_767_225_605_000 } }));
      return w.posts(mark);
    });
    expect(bundle).toEqual([
      { method: 'POST', connectionId, body: { type: 'event', event: { type: 'released', name, holder: 'worker-a', token: held.token, atMs: 1_767_225_605_000 } } },
    ]);
  });

  it('stream: drops the subscriptions of a connection the management API reports gone (410)', async () => {
    const connectionId = 'gOnE0Aa1=';
    const name = 'infra-gone.job';
    const { bundle } = await watchSideBySide(async (w) => {
      await w.connect(connectionId);
      await w.invoke('watch-subscribe', socketEvent('subscribe', connectionId, { action: 'subscribe', names: [name], prefixes: ['infra-gone.'] }));
      const before = (await w.subscriptionsOf(connectionId)).length;
      management.gone.add(connectionId);
      try {
        const result = await w.invoke('watch-stream', streamEvent({ newItem: leaseItem(name, { holder: 'worker-a' }) }));
        return { before, result, after: await w.subscriptionsOf(connectionId) };
      } finally {
        management.gone.delete(connectionId);
      }
    });
    // The scope, the name, the prefix and the principal's count.
    expect(bundle).toEqual({ before: 4, result: { batchItemFailures: [] }, after: [] });
  });
});
