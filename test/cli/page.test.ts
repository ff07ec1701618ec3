import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, RwlockClient, type Grant, type JsonValue, type Permit, type RwlockGrant, type RwlockMode } from '../../client/src/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { ROOT } from './support.js';

/**
 * The live lease page of the local server (GET /), its leases, semaphores and rwlocks, in headless Chromium (Debian's `chromium`,
 * driven by playwright-core). Never skipped: if Chromium is missing, scripts/ensure-chromium.sh
 * installs it (root and apt needed, as in CI).
 *
 * LEASEHOLD_PAGE_SCREENSHOT=docs/lease-page.png also saves the screenshot used in the docs.
 */

const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let server: TestServer;
let client: LeaseClient;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) execFileSync('bash', [join(ROOT, 'scripts/ensure-chromium.sh')], { stdio: 'inherit' });
  server = await startTestServer({ watch: true, semaphores: true });
  client = new LeaseClient({ endpoint: server.url });
  // Playwright launches with a fresh, temporary user-data-dir of its own.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  page = await browser.newPage({ viewport: { width: 1100, height: 560 } });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function acquire(name: string, holder: string, ttlMs = 15_000, metadata?: JsonValue): Promise<Grant> {
  const result = await client.acquire(name, { holder, ttlMs, ...(metadata === undefined ? {} : { metadata }) });
  if (!result.acquired) throw new Error(`${name} is held by ${result.lease.holder}`);
  return result.lease;
}

/** The row of a lease, as the user sees it: cell texts, tooltips and the time bar. */
async function rowOf(name: string, on: Page = page) {
  const row = on.getByRole('row').filter({ has: on.getByRole('cell', { name, exact: true }) });
  const cells = await row.getByRole('cell').allTextContents();
  const bar = row.getByRole('progressbar');
  return {
    holder: cells[1],
    token: cells[2],
    transitions: cells[3],
    metadata: cells[4],
    metadataTitle: await row.locator('td.metadata').getAttribute('title'),
    change: cells[5],
    changeTitle: await row.locator('td.change').getAttribute('title'),
    left: cells[6],
    valueNow: Number(await bar.getAttribute('value')),
    valueMax: Number(await bar.getAttribute('max')),
    label: await bar.getAttribute('aria-label'),
  };
}

/** Lease names in the order the table shows them. */
function shownNames(on: Page = page): Promise<string[]> {
  return on.locator('#leases tbody td.name').allTextContents();
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const started = performance.now();
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the live lease page (GET /)', () => {
  let first: Grant;

  it('lists a lease acquired by the test with its holder, token, transitions and a time-left bar', async () => {
    first = await acquire('my-app:cron-leader', 'worker-1');
    await page.goto(server.url);
    expect(await page.title()).toBe('Leases · leasehold');
    const row = await until('the lease row', async () => {
      const r = await rowOf('my-app:cron-leader');
      return r.holder === 'worker-1' ? r : undefined;
    });
    expect(row).toMatchObject({ token: String(first.token), transitions: '1', valueMax: 15_000, label: 'Time left for my-app:cron-leader' });
    expect(row.valueNow).toBeGreaterThan(0);
    expect(row.valueNow).toBeLessThanOrEqual(15_000);
    expect(row).toMatchObject({ metadata: '—', metadataTitle: 'no metadata' });
    expect(row.change).toMatch(/^(just now|\d+s ago)$/);
    expect(row.changeTitle).toBe(`acquired at ${new Date(first.acquiredAt).toISOString()}`);
    expect(await page.getByRole('columnheader').allTextContents()).toEqual([
      'Name',
      'Holder',
      'Token',
      'Transitions',
      'Metadata',
      'Last change',
      'Time left',
    ]);
  });

  it('then shows its change of holder, with the next token and transition', async () => {
    await client.release('my-app:cron-leader', first);
    await acquire('my-app:cron-leader', 'worker-2');
    const row = await until('the new holder', async () => {
      const r = await rowOf('my-app:cron-leader');
      return r.holder === 'worker-2' ? r : undefined;
    });
    expect(row).toMatchObject({ token: String(first.token + 1), transitions: '2' });
  });

  it('filters by name prefix with its labelled input, and keeps the filter in the address', async () => {
    await Promise.all([
      acquire('my-app:compactor', 'worker-3', 30_000, { region: 'eu-west-1', pid: 4121 }),
      acquire('billing:sweep', 'sweeper-7', 10_000, { version: '2.3.1', host: 'ip-10-0-3-17.ec2.internal', startedBy: 'deploy-8841' }),
      acquire('reports:nightly', 'cron-host-2', 60_000),
    ]);
    await until('all four leases', async () => ((await page.locator('#leases tbody tr').count()) === 4 ? true : undefined));
    await page.getByLabel('Filter by name prefix').fill('my-app:');
    const names = await until('only my-app leases', async () => {
      const shown = await page.locator('#leases tbody td.name').allTextContents();
      return shown.length === 2 ? shown : undefined;
    });
    // Both held: the one with less time left first (cron-leader has 15 s, compactor 30 s).
    expect(names).toEqual(['my-app:cron-leader', 'my-app:compactor']);
    expect(new URL(page.url()).searchParams.get('prefix')).toBe('my-app:');
    expect(await page.getByRole('status').textContent()).toContain('2 leases with prefix “my-app:”');
  });

  it('shows a released lease as available with an empty bar, and when its last grant ended', async () => {
    await page.getByLabel('Filter by name prefix').fill('');
    const report = await until('the report lease', async () => ((await page.locator('#leases tbody tr').count()) === 4 ? true : undefined));
    expect(report).toBe(true);
    const grant = await acquire('reports:weekly', 'cron-host-1', 20_000);
    await client.release('reports:weekly', grant);
    const row = await until('the released lease', async () => {
      const r = await rowOf('reports:weekly');
      return r.holder === 'available' ? r : undefined;
    });
    expect(row.valueNow).toBe(0);
    expect(row.changeTitle).toMatch(/^ended at \d{4}-\d\d-\d\dT/);
    expect(row.change).toMatch(/^(just now|\d+s ago)$/);

    const screenshot = process.env.LEASEHOLD_PAGE_SCREENSHOT;
    if (screenshot) {
      await until('the watch to be live', async () => ((await page.getByRole('status').textContent())?.includes('live') ? true : undefined));
      const path = join(ROOT, screenshot);
      mkdirSync(dirname(path), { recursive: true });
      await page.getByLabel('Filter by name prefix').blur();
      await page.setViewportSize({ width: 1100, height: 450 });
      await page.screenshot({ path, fullPage: true });
    }
  });
});

describe('the first paint, the order and escaping', () => {
  it('orders held leases by time left, soonest first, then the others by name, in the first paint and live', async () => {
    const [, short] = await Promise.all([acquire('order:b-long', 'worker-b', 60_000), acquire('order:c-short', 'worker-c', 10_000)]);
    for (const name of ['order:d-free', 'order:a-free']) await client.release(name, await acquire(name, 'worker-x', 20_000));
    const expected = ['order:c-short', 'order:b-long', 'order:a-free', 'order:d-free'];

    const noScript = await browser.newPage({ javaScriptEnabled: false });
    await noScript.goto(`${server.url}/?prefix=order:`);
    expect(await shownNames(noScript)).toEqual(expected);
    await noScript.close();

    await page.goto(`${server.url}/?prefix=order:`);
    expect(await shownNames()).toEqual(expected);
    // A release moves the lease from the held group to the others, in name order.
    await client.release('order:c-short', short);
    const moved = ['order:b-long', 'order:a-free', 'order:c-short', 'order:d-free'];
    expect(await until('the released lease to move', async () => {
      const names = await shownNames();
      return names.join() === moved.join() ? names : undefined;
    })).toEqual(moved);
  });

  it('heads its three sections "Leases", "Semaphores" and "Shared and exclusive leases (rwlocks)"', async () => {
    await page.goto(server.url);
    expect(await page.getByRole('heading', { level: 2 }).allTextContents()).toEqual(['Leases', 'Semaphores', 'Shared and exclusive leases (rwlocks)']);
    expect(await page.getByRole('region', { name: 'Leases' }).getByRole('table').count()).toBe(1);
  });

  it('says the watch is live once it subscribes, instead of "connecting to the watch…"', async () => {
    await page.goto(server.url);
    const text = await until('the watch to be live', async () => {
      const shown = await page.getByRole('status').textContent();
      return shown?.includes('live: watch pushes') ? shown : undefined;
    });
    expect(text).not.toContain('connecting');
  });

  it('stops saying "connecting to the watch…" when the watch never answers: it polls, and says so', async () => {
    await acquire('silent-watch:a', 'worker-s');
    const silent = await browser.newPage();
    // A watch that accepts the connection and never answers a subscription.
    await silent.routeWebSocket(/\/v1\/watch/, () => undefined);
    await silent.goto(`${server.url}/?prefix=silent-watch:`);
    expect(await shownNames(silent)).toEqual(['silent-watch:a']);
    const text = await until('the watch to be reported unavailable', async () => {
      const shown = await silent.getByRole('status').textContent();
      return shown?.includes('watch unavailable') ? shown : undefined;
    }, 10_000);
    expect(text).toBe('1 lease with prefix “silent-watch:” · polling every second (watch unavailable)');
    await silent.close();
  });

  it('says the watch is unavailable at once when it refuses the subscription', async () => {
    const refused = await browser.newPage();
    await refused.routeWebSocket(/\/v1\/watch/, (ws) => {
      ws.onMessage(() => ws.send(JSON.stringify({ type: 'error', error: { code: 'FORBIDDEN', message: 'not allowed' } })));
    });
    const started = performance.now();
    await refused.goto(`${server.url}/?prefix=silent-watch:`);
    await until('the refusal to show', async () => ((await refused.getByRole('status').textContent())?.includes('watch unavailable') ? true : undefined), 10_000);
    expect(performance.now() - started).toBeLessThan(4_000);
    await refused.close();
  });

  it('has the rows, metadata and status in the HTML itself: no empty "Loading…" frame', async () => {
    const grant = await acquire('paint:with-metadata', 'worker-m', 30_000, {
      owner: 'team-payments',
      build: '2026.11.23-4',
      region: 'eu-west-1',
      note: 'a long value that does not fit in the table cell',
    });
    const noScript = await browser.newPage({ javaScriptEnabled: false });
    await noScript.goto(`${server.url}/?prefix=paint:`);
    const row = await rowOf('paint:with-metadata', noScript);
    expect(row).toMatchObject({ holder: 'worker-m', token: String(grant.token), transitions: '1', valueMax: 30_000 });
    expect(row.valueNow).toBeGreaterThan(25_000);
    expect(row.left).toMatch(/ s left$/);
    expect(row.change).toMatch(/^(just now|\d+s ago)$/);
    // Compact: one line, cut with an ellipsis; the whole JSON is in the tooltip.
    expect(row.metadata).toMatch(/^\{"owner":"team-payments",.*…$/);
    expect(row.metadata?.length).toBeLessThanOrEqual(48);
    expect(JSON.parse(row.metadataTitle ?? '')).toEqual(grant.metadata);
    expect(await noScript.getByRole('status').textContent()).toBe('1 lease with prefix “paint:” · polling every second, connecting to the watch…');
    await noScript.close();
  });

  it('keeps the painted rows, and counts them down, while its first read of the API is still pending', async () => {
    const scripted = await browser.newPage();
    // Hold every list request: whatever the table shows now came with the HTML.
    await scripted.route('**/v1/leases?**', () => undefined);
    await scripted.goto(`${server.url}/?prefix=paint:`, { waitUntil: 'load' });
    await scripted.waitForFunction(() => document.querySelector('#leases tbody tr') !== null);
    expect(await shownNames(scripted)).toEqual(['paint:with-metadata']);
    const painted = await rowOf('paint:with-metadata', scripted);
    expect(painted.holder).toBe('worker-m');
    // The script took the painted leases over: it counts their time left down without any answer.
    await until('the bar to count down', async () => ((await rowOf('paint:with-metadata', scripted)).valueNow < painted.valueNow ? true : undefined));
    await scripted.close();
  });

  it('escapes holders and metadata everywhere, and never puts a leaseId in the page', async () => {
    const holder = '<img/src=x/onerror=alert(1)>';
    const metadata = { note: '</script><script>alert(2)</script>', quote: '"\'&' };
    const grant = await acquire('xss:holder', holder, 30_000, metadata);

    const html = await (await fetch(`${server.url}/?prefix=xss:`, { headers: { accept: 'text/html' } })).text();
    expect(html).not.toContain('<img/src=x');
    expect(html).not.toContain('<script>alert(2)');
    expect(html).toContain('&lt;img/src=x/onerror=alert(1)&gt;');
    expect(html).not.toContain(grant.leaseId);

    const dialogs: string[] = [];
    const scripted = await browser.newPage();
    scripted.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    // The script's own read of the API renders the row a second time, through the DOM.
    const read = scripted.waitForResponse((response) => response.url().includes('/v1/leases?'));
    await scripted.goto(`${server.url}/?prefix=xss:`);
    await read;
    await scripted.waitForFunction(() => document.querySelector('#leases tbody td.holder')?.textContent !== '');
    const row = await rowOf('xss:holder', scripted);
    expect(row.holder).toBe(holder);
    expect(JSON.parse(row.metadataTitle ?? '')).toEqual(metadata);
    expect(await scripted.locator('img').count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(await scripted.content()).not.toContain(grant.leaseId);
    await scripted.close();
  });

  it('shows no leases in the HTML of a server that demands SigV4 (the browser could not read them either)', async () => {
    const signed = await startTestServer({
      tableName: server.tableName,
      sigv4: { credentials: [{ accessKeyId: 'AKIDPAGETEST', secretAccessKey: 'page-test-secret' }], region: 'us-east-1' },
    });
    try {
      const html = await (await fetch(`${signed.url}/`, { headers: { accept: 'text/html' } })).text();
      expect(html).toContain('<tbody></tbody>');
      expect(html).not.toContain('initial-leases');
      expect(html).not.toContain('order:b-long');
    } finally {
      await signed.close();
    }
  });
});

/** A permit of semaphore `name`, acquired through the public API as any client would. */
async function acquirePermit(name: string, holder: string, options: { ttlMs?: number; limit?: number; metadata?: JsonValue } = {}): Promise<Permit> {
  const { ttlMs = 15_000, limit = 3, metadata } = options;
  const response = await fetch(`${server.url}/v1/semaphores/${name}/acquire`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ holder, ttlMs, limit, ...(metadata === undefined ? {} : { metadata }) }),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`acquiring a permit of ${name}: ${response.status} ${JSON.stringify(body)}`);
  return body.permit;
}

async function releasePermit(permit: Permit): Promise<void> {
  const response = await fetch(`${server.url}/v1/semaphores/${permit.name}/release`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ permitId: permit.permitId, token: permit.token }),
  });
  if (!response.ok) throw new Error(`releasing ${permit.name} token ${permit.token}: ${response.status} ${await response.text()}`);
}

/** Names a semaphore in the section's labelled input, as the user does. */
async function watchSemaphore(name: string, on: Page = page): Promise<void> {
  await on.getByLabel('Watch a semaphore').fill(name);
  await on.getByRole('button', { name: 'Watch', exact: true }).click();
}

/**
 * A watched semaphore's block as the user sees it: its count line and a row per holder. Read in one
 * go, as the rows are at one instant (a poll may replace them between two separate reads).
 */
function semaphoreOf(name: string, on: Page = page) {
  return on.getByRole('group', { name, exact: true }).evaluate(
    (block) => ({
      count: block.querySelector('.count')?.textContent,
      holders: Array.from(block.querySelectorAll('tbody tr'), (row) => {
        const cells = Array.from(row.querySelectorAll('td'));
        const bar = row.querySelector('progress');
        return {
          holder: cells[0]?.textContent,
          token: cells[1]?.textContent,
          metadata: cells[2]?.textContent,
          metadataTitle: cells[2]?.title,
          left: cells[3]?.textContent,
          valueNow: Number(bar?.getAttribute('value')),
          label: bar?.getAttribute('aria-label'),
        };
      }),
    }),
    undefined,
    { timeout: 1_000 },
  );
}

/** The block of `name` once its count line reads `count`. */
function semaphoreShowing(name: string, count: string, on: Page = page) {
  return until(`${name} to show "${count}"`, async () => {
    const shown = await semaphoreOf(name, on);
    return shown.count === count ? shown : undefined;
  });
}

function watchedInAddress(on: Page = page): string | null {
  return new URL(on.url()).searchParams.get('semaphores');
}

describe('the semaphores section (no list route, no watch: each named semaphore is read every second)', () => {
  let first: Permit;
  let second: Permit;

  it('shows a semaphore named in its labelled input: "2 of 3 held", a row per holder with a time-left bar, no permitId', async () => {
    // worker-a holds on for the whole section; the others come and go.
    first = await acquirePermit('jobs:pool', 'worker-a', { ttlMs: 120_000, metadata: { pid: 4121 } });
    second = await acquirePermit('jobs:pool', 'worker-b', { ttlMs: 20_000 });
    await page.goto(server.url);
    await watchSemaphore('jobs:pool');
    const shown = await semaphoreShowing('jobs:pool', '2 of 3 held');
    expect(shown.holders.map((h) => [h.holder, h.token, h.metadata])).toEqual([
      ['worker-a', String(first.token), '{"pid":4121}'],
      ['worker-b', String(second.token), '—'],
    ]);
    expect(JSON.parse(shown.holders[0]?.metadataTitle ?? '')).toEqual({ pid: 4121 });
    expect(shown.holders[0]?.label).toBe(`Time left for token ${first.token} (worker-a) of jobs:pool`);
    for (const [holder, ttlMs] of [[shown.holders[0], 120_000], [shown.holders[1], 20_000]] as const) {
      expect(holder?.valueNow).toBeGreaterThan(ttlMs - 10_000);
      expect(holder?.valueNow).toBeLessThanOrEqual(ttlMs);
      expect(holder?.left).toMatch(/ s left$/);
    }
    expect(watchedInAddress()).toBe('jobs:pool');
    expect(await page.getByLabel('Watch a semaphore').inputValue()).toBe('');
    const html = await page.content();
    expect(html).not.toContain(first.permitId);
    expect(html).not.toContain(second.permitId);
  });

  it('follows a release and an expiry: the holder leaves and the count drops', async () => {
    await releasePermit(second);
    const released = await semaphoreShowing('jobs:pool', '1 of 3 held');
    expect(released.holders.map((h) => h.holder)).toEqual(['worker-a']);

    const brief = await acquirePermit('jobs:pool', 'worker-c', { ttlMs: 3_000 });
    const joined = await semaphoreShowing('jobs:pool', '2 of 3 held');
    expect(joined.holders.map((h) => [h.holder, h.token])).toEqual([
      ['worker-a', String(first.token)],
      ['worker-c', String(brief.token)],
    ]);
    // Nobody releases worker-c's permit: it runs out, and the next read no longer lists it.
    const expired = await semaphoreShowing('jobs:pool', '1 of 3 held');
    expect(expired.holders.map((h) => h.holder)).toEqual(['worker-a']);
  });

  it('says "full" when every permit is out', async () => {
    const full = [await acquirePermit('jobs:pool', 'worker-d'), await acquirePermit('jobs:pool', 'worker-e')];
    const shown = await semaphoreShowing('jobs:pool', '3 of 3 held · full');
    expect(shown.holders.map((h) => h.holder).sort()).toEqual(['worker-a', 'worker-d', 'worker-e']);
    await Promise.all(full.map(releasePermit));
    await semaphoreShowing('jobs:pool', '1 of 3 held');
  });

  it('counts the holders\' time left down between its reads of the API', async () => {
    const scripted = await browser.newPage();
    let reads = 0;
    // Let the first read through, then hold every later one: only the page's own clock moves the bars.
    await scripted.route('**/v1/semaphores/**', (route) => (++reads === 1 ? route.continue() : undefined));
    await scripted.goto(`${server.url}/?semaphores=jobs:pool`);
    const before = await semaphoreShowing('jobs:pool', '1 of 3 held', scripted);
    // More than a poll interval's worth: the page does not wait for an answer to move the bars.
    const later = await until('the bar to count down', async () => {
      const shown = await semaphoreOf('jobs:pool', scripted);
      return (shown.holders[0]?.valueNow ?? Infinity) < (before.holders[0]?.valueNow ?? 0) - 1_500 ? shown : undefined;
    });
    expect(later.holders[0]?.left).toMatch(/ s left$/);
    expect(later.count).toBe('1 of 3 held');
    await scripted.close();
  });

  it('says "not used yet" for a name nobody has acquired', async () => {
    await watchSemaphore('nobody:yet');
    const shown = await semaphoreShowing('nobody:yet', 'not used yet');
    expect(shown.holders).toEqual([]);
    const table = page.getByRole('group', { name: 'nobody:yet' }).locator('table');
    expect(await table.count()).toBe(1);
    expect(await table.isHidden()).toBe(true);
    expect(watchedInAddress()).toBe('jobs:pool,nobody:yet');
  });

  it('refuses a name the API would refuse, says why, and leaves the address alone', async () => {
    const input = page.getByLabel('Watch a semaphore');
    await watchSemaphore('-starts-with-a-dash');
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    const problem = page.getByRole('alert');
    expect(await problem.isVisible()).toBe(true);
    expect(await problem.textContent()).toBe('A semaphore name is 1-200 letters, digits and . _ : -, starting with a letter or digit.');
    expect(await page.getByRole('group').count()).toBe(2);
    expect(watchedInAddress()).toBe('jobs:pool,nobody:yet');
    await input.fill('jobs:pool2');
    expect(await input.getAttribute('aria-invalid')).toBe('false');
    expect(await problem.isVisible()).toBe(false);
  });

  it('keeps the names in the address: a reload shows the same blocks, and Remove drops one from both', async () => {
    await page.reload();
    await semaphoreShowing('jobs:pool', '1 of 3 held');
    await semaphoreShowing('nobody:yet', 'not used yet');
    expect(await page.locator('.semaphore h3').allTextContents()).toEqual(['jobs:pool', 'nobody:yet']);

    await page.getByRole('group', { name: 'nobody:yet' }).getByRole('button', { name: 'Remove' }).click();
    expect(await page.getByRole('group').count()).toBe(1);
    expect(watchedInAddress()).toBe('jobs:pool');
    await page.reload();
    await semaphoreShowing('jobs:pool', '1 of 3 held');
    expect(await page.locator('.semaphore h3').allTextContents()).toEqual(['jobs:pool']);

    // An address written by hand: invalid and repeated names are dropped, from the page and the address.
    await page.goto(`${server.url}/?semaphores=${encodeURIComponent('nobody:yet,not valid,nobody:yet')}`);
    await semaphoreShowing('nobody:yet', 'not used yet');
    expect(await page.getByRole('group').count()).toBe(1);
    expect(watchedInAddress()).toBe('nobody:yet');
  });

  it('escapes holders and metadata of permits, and never puts a permitId in the page', async () => {
    const holder = '<img/src=x/onerror=alert(1)>';
    const metadata = { note: '</script><script>alert(2)</script>', quote: '"\'&' };
    const permit = await acquirePermit('xss:pool', holder, { metadata });
    const dialogs: string[] = [];
    const scripted = await browser.newPage();
    scripted.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await scripted.goto(`${server.url}/?semaphores=xss:pool`);
    const shown = await semaphoreShowing('xss:pool', '1 of 3 held', scripted);
    expect(shown.holders[0]?.holder).toBe(holder);
    expect(JSON.parse(shown.holders[0]?.metadataTitle ?? '')).toEqual(metadata);
    expect(await scripted.locator('img').count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(await scripted.content()).not.toContain(permit.permitId);
    await scripted.close();
  });
});

/** A grant of rwlock `name`, acquired through the public API as any client would. */
async function acquireRwlock(name: string, holder: string, mode: RwlockMode, ttlMs = 15_000): Promise<RwlockGrant> {
  const result = await new RwlockClient({ endpoint: server.url }).acquire(name, { holder, mode, ttlMs });
  if (!result.acquired) throw new Error(`${name} refused ${holder} (${mode}): ${JSON.stringify(result.rwlock)}`);
  return result.grant;
}

/** Names a rwlock in the section's labelled input, and submits it from the keyboard. */
async function watchRwlock(name: string, on: Page = page): Promise<void> {
  await on.getByLabel('Watch a rwlock').fill(name);
  await on.getByLabel('Watch a rwlock').press('Enter');
}

/**
 * A watched rwlock's block as the user sees it: its phase line, the waiting writer's line (null
 * while hidden) and a row per live grant, read in one go (a poll may replace them between reads).
 */
function rwlockOf(name: string, on: Page = page) {
  return on.getByRole('group', { name, exact: true }).evaluate(
    (block) => {
      const waiting = block.querySelector<HTMLElement>('.waiting');
      return {
        phase: block.querySelector('.phase')?.textContent,
        waiting: waiting && !waiting.hidden ? waiting.textContent : null,
        waitedTitle: waiting?.querySelector<HTMLElement>('.waited')?.title,
        tableHidden: block.querySelector('table')?.hidden,
        grants: Array.from(block.querySelectorAll('tbody tr'), (row) => {
          const cells = Array.from(row.querySelectorAll('td'));
          const bar = row.querySelector('progress');
          return {
            holder: cells[0]?.textContent,
            mode: cells[1]?.textContent,
            token: cells[2]?.textContent,
            left: cells[3]?.textContent,
            valueNow: Number(bar?.getAttribute('value')),
            valueMax: Number(bar?.getAttribute('max')),
            label: bar?.getAttribute('aria-label'),
          };
        }),
      };
    },
    undefined,
    { timeout: 1_000 },
  );
}

/** The block of `name` once `check` holds for what it shows. */
function rwlockShowing(name: string, what: string, check: (shown: Awaited<ReturnType<typeof rwlockOf>>) => boolean, on: Page = page) {
  return until(`${name} to show ${what}`, async () => {
    const shown = await rwlockOf(name, on);
    return check(shown) ? shown : undefined;
  });
}

describe('the rwlocks section (no list route, no watch: each named rwlock is read every second)', () => {
  const name = 'reports:daily';
  let readers: RwlockGrant[];

  it('shows two readers of one shared phase, each with the phase\'s one token, its mode and a bar on its ttl, and no leaseId', async () => {
    readers = [await acquireRwlock(name, 'reader-1', 'shared', 45_000), await acquireRwlock(name, 'reader-2', 'shared', 20_000)];
    const token = readers[0]!.token;
    expect(readers[1]!.token).toBe(token);
    await page.goto(server.url);
    await watchRwlock(name);
    const shown = await rwlockShowing(name, 'two readers', (s) => s.grants.length === 2);
    expect(shown.phase).toBe(`shared by 2 holders (at most 32) · token ${token}`);
    expect(shown.grants.map((g) => [g.holder, g.mode, g.token])).toEqual([
      ['reader-1', 'shared', String(token)],
      ['reader-2', 'shared', String(token)],
    ]);
    expect(shown.grants.map((g) => g.valueMax)).toEqual([45_000, 20_000]);
    for (const [g, ttlMs] of [[shown.grants[0], 45_000], [shown.grants[1], 20_000]] as const) {
      expect(g?.valueNow).toBeGreaterThan(ttlMs - 10_000);
      expect(g?.valueNow).toBeLessThanOrEqual(ttlMs);
      expect(g?.left).toMatch(/ s left$/);
    }
    expect(shown.grants[0]?.label).toBe(`Time left for the shared grant of reader-1 on ${name}`);
    expect(shown.waiting).toBeNull();
    expect(new URL(page.url()).searchParams.get('rwlocks')).toBe(name);
    expect(await page.getByLabel('Watch a rwlock').inputValue()).toBe('');
    const html = await page.content();
    for (const grant of readers) expect(html).not.toContain(grant.leaseId);
  });

  it('shows a waiting writer: who, how long it has waited, when the readers end at the latest, and when its wait lapses', async () => {
    const asked = await new RwlockClient({ endpoint: server.url }).acquire(name, { holder: 'writer-1', mode: 'exclusive', ttlMs: 30_000 });
    expect(asked.acquired).toBe(false);
    const since = asked.acquired ? 0 : (asked.rwlock.waitingWriter?.since ?? 0);
    const shown = await rwlockShowing(name, 'the waiting writer', (s) => s.waiting !== null);
    expect(shown.waiting).toMatch(
      /^Writer waiting: writer-1 · waiting [\d.]+ (ms|s) · the readers' grants end within [\d.]+ s · its wait lapses in [\d.]+ s unless it asks again$/,
    );
    expect(shown.waitedTitle).toBe(`waiting since ${new Date(since).toISOString()}`);
    // The readers still hold: the writer waits for them, and nobody new may join them meanwhile.
    expect(shown.grants.map((g) => g.holder)).toEqual(['reader-1', 'reader-2']);
    expect(shown.phase).toBe(`shared by 2 holders (at most 32) · token ${readers[0]!.token} · a writer waits`);
  });

  it("counts the grants' time left down and the writer's wait up between its reads of the API", async () => {
    const scripted = await browser.newPage();
    let reads = 0;
    // Let the first read through, then hold every later one: only the page's own clock moves the times.
    await scripted.route('**/v1/rwlocks/**', (route) => (++reads === 1 ? route.continue() : undefined));
    await scripted.goto(`${server.url}/?rwlocks=${name}`);
    const before = await rwlockShowing(name, 'the waiting writer', (s) => s.waiting !== null, scripted);
    const waited = (s: typeof before) => Number(/waiting ([\d.]+) s/.exec(s.waiting ?? '')?.[1] ?? Number.NaN);
    // More than a poll interval's worth: the page does not wait for an answer to move them.
    const later = await rwlockShowing(name, 'the times to move', (s) => (s.grants[0]?.valueNow ?? Infinity) < (before.grants[0]?.valueNow ?? 0) - 1_500, scripted);
    expect(waited(later)).toBeGreaterThan(waited(before));
    expect(reads).toBeGreaterThan(1);
    await scripted.close();
  });

  it("replaces the readers with the writer's exclusive grant, with the next token, once they release", async () => {
    const client = new RwlockClient({ endpoint: server.url });
    for (const grant of readers) await client.release(name, grant);
    const writer = await acquireRwlock(name, 'writer-1', 'exclusive', 30_000);
    expect(writer.token).toBe(readers[0]!.token + 1);
    const shown = await rwlockShowing(name, 'the exclusive grant', (s) => s.phase === `exclusive · token ${writer.token}`);
    expect(shown.grants.map((g) => [g.holder, g.mode, g.token, g.valueMax])).toEqual([['writer-1', 'exclusive', String(writer.token), 30_000]]);
    expect(shown.waiting).toBeNull();
    expect(await page.content()).not.toContain(writer.leaseId);

    await client.release(name, writer);
    const free = await rwlockShowing(name, 'a free lock', (s) => s.grants.length === 0);
    expect(free.phase).toBe(`free · last token ${writer.token}`);
    expect(free.tableHidden).toBe(true);
  });

  it('says plainly that a name nobody has used is not in use', async () => {
    await watchRwlock('nobody:rw');
    const shown = await rwlockShowing('nobody:rw', '"not in use"', (s) => s.phase !== 'Loading…');
    expect(shown).toMatchObject({ phase: 'not in use: no grant of it is on record', waiting: null, grants: [], tableHidden: true });
    expect(new URL(page.url()).searchParams.get('rwlocks')).toBe(`${name},nobody:rw`);
    await page.getByRole('group', { name: 'nobody:rw' }).getByRole('button', { name: 'Remove nobody:rw' }).click();
    expect(new URL(page.url()).searchParams.get('rwlocks')).toBe(name);
  });

  it('reads a rwlock at once when the watch pushes the release that frees it, with the page\'s clock (and its reads every second) stopped', async () => {
    const lock = 'watch:rw';
    const held = [await acquireRwlock(lock, 'reader-a', 'shared', 30_000), await acquireRwlock(lock, 'reader-b', 'shared', 30_000)];
    const paused = await browser.newPage();
    // No timer of the page ever fires: it reads the lock once at start, and then only when an event makes it.
    await paused.clock.install({ time: Date.now() });
    await paused.clock.pauseAt(Date.now() + 1_000);
    let reads = 0;
    await paused.route('**/v1/rwlocks/**', (route) => {
      reads++;
      return route.continue();
    });
    await paused.goto(`${server.url}/?rwlocks=${lock}`);
    await rwlockShowing(lock, 'its two readers', (s) => s.grants.length === 2, paused);
    await until('the watch to be live', async () => ((await paused.locator('#rwlock-refresh').textContent())?.endsWith('(watch live).') ? true : undefined));
    expect(reads).toBe(1);
    const client = new RwlockClient({ endpoint: server.url });
    for (const grant of held) await client.release(lock, grant);
    const free = await rwlockShowing(lock, 'a free lock', (s) => s.phase?.startsWith('free') === true, paused);
    expect(free).toMatchObject({ phase: `free · last token ${held[0]!.token}`, grants: [], tableHidden: true });
    await paused.close();
  });

  it('says it reads every second alone when the watch refuses its subscription', async () => {
    const refused = await browser.newPage();
    await refused.routeWebSocket(/\/v1\/watch/, (ws) => {
      ws.onMessage(() => ws.send(JSON.stringify({ type: 'error', error: { code: 'FORBIDDEN', message: 'not allowed' } })));
    });
    await refused.goto(`${server.url}/?rwlocks=${name}`);
    const text = await until('the refusal to show', async () => {
      const shown = await refused.locator('#rwlock-refresh').textContent();
      return shown?.includes('unavailable') ? shown : undefined;
    });
    expect(text).toBe('Each rwlock is read every second (watch unavailable).');
    await refused.close();
  });

  it('never lets a name or a holder put HTML in the page: hostile names are refused, hostile holders shown as text', async () => {
    const hostile = '<img/src=x/onerror=alert(1)>';
    const reader = await acquireRwlock('xss:rw', hostile, 'shared', 30_000);
    const asked = await new RwlockClient({ endpoint: server.url }).acquire('xss:rw', { holder: '<script>alert(2)</script>', mode: 'exclusive', ttlMs: 30_000 });
    expect(asked.acquired).toBe(false);
    const dialogs: string[] = [];
    const scripted = await browser.newPage();
    scripted.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    // A hostile name in the address is dropped, from the page and from the address.
    await scripted.goto(`${server.url}/?rwlocks=${encodeURIComponent(`${hostile},xss:rw`)}`);
    const shown = await rwlockShowing('xss:rw', 'the hostile holders', (s) => s.waiting !== null && s.grants.length === 1, scripted);
    expect(shown.grants[0]?.holder).toBe(hostile);
    expect(shown.waiting).toContain('Writer waiting: <script>alert(2)</script> · waiting');
    expect(new URL(scripted.url()).searchParams.get('rwlocks')).toBe('xss:rw');
    expect(await scripted.locator('.rwlock').count()).toBe(1);
    // A hostile name typed in is refused with the reason, and nothing is added.
    await watchRwlock(hostile, scripted);
    expect(await scripted.getByLabel('Watch a rwlock').getAttribute('aria-invalid')).toBe('true');
    expect(await scripted.getByRole('alert').textContent()).toBe('A rwlock name is 1-200 letters, digits and . _ : -, starting with a letter or digit.');
    expect(await scripted.locator('.rwlock').count()).toBe(1);
    expect(await scripted.locator('img').count()).toBe(0);
    // The one inline script block is the first paint's JSON (data, not code).
    expect(await scripted.locator('script:not([src]):not([type="application/json"])').count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(await scripted.content()).not.toContain(reader.leaseId);
    await scripted.close();
  });
});
