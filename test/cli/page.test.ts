import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, type Grant, type JsonValue } from '../../client/src/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { ROOT } from './support.js';

/**
 * The live lease page of the local server (GET /), in headless Chromium (Debian's `chromium`,
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
  server = await startTestServer({ watch: true });
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
  return on.locator('tbody td.name').allTextContents();
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
    await until('all four leases', async () => ((await page.locator('tbody tr').count()) === 4 ? true : undefined));
    await page.getByLabel('Filter by name prefix').fill('my-app:');
    const names = await until('only my-app leases', async () => {
      const shown = await page.locator('tbody td.name').allTextContents();
      return shown.length === 2 ? shown : undefined;
    });
    // Both held: the one with less time left first (cron-leader has 15 s, compactor 30 s).
    expect(names).toEqual(['my-app:cron-leader', 'my-app:compactor']);
    expect(new URL(page.url()).searchParams.get('prefix')).toBe('my-app:');
    expect(await page.getByRole('status').textContent()).toContain('2 leases with prefix “my-app:”');
  });

  it('shows a released lease as available with an empty bar, and when its last grant ended', async () => {
    await page.getByLabel('Filter by name prefix').fill('');
    const report = await until('the report lease', async () => ((await page.locator('tbody tr').count()) === 4 ? true : undefined));
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
    await scripted.waitForFunction(() => document.querySelector('tbody tr') !== null);
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
    await scripted.waitForFunction(() => document.querySelector('tbody td.holder')?.textContent !== '');
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
