import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, type Grant } from '../../client/src/index.js';
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

async function acquire(name: string, holder: string, ttlMs = 15_000): Promise<Grant> {
  const result = await client.acquire(name, { holder, ttlMs });
  if (!result.acquired) throw new Error(`${name} is held by ${result.lease.holder}`);
  return result.lease;
}

/** The row of a lease, as the user sees it: cell texts and the time bar's ARIA state. */
async function rowOf(name: string) {
  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) });
  const cells = await row.getByRole('cell').allTextContents();
  const bar = row.getByRole('progressbar');
  return {
    holder: cells[1],
    token: cells[2],
    transitions: cells[3],
    valueNow: Number(await bar.getAttribute('aria-valuenow')),
    valueMax: Number(await bar.getAttribute('aria-valuemax')),
    label: await bar.getAttribute('aria-label'),
  };
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
    expect(await page.getByRole('columnheader').allTextContents()).toEqual(['Name', 'Holder', 'Token', 'Transitions', 'Time left']);
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
    await Promise.all([acquire('my-app:compactor', 'worker-3', 30_000), acquire('billing:sweep', 'sweeper-7', 10_000), acquire('reports:nightly', 'cron-host-2', 60_000)]);
    await until('all four leases', async () => ((await page.locator('tbody tr').count()) === 4 ? true : undefined));
    await page.getByLabel('Filter by name prefix').fill('my-app:');
    const names = await until('only my-app leases', async () => {
      const shown = await page.locator('tbody td.name').allTextContents();
      return shown.length === 2 ? shown : undefined;
    });
    expect(names).toEqual(['my-app:compactor', 'my-app:cron-leader']);
    expect(new URL(page.url()).searchParams.get('prefix')).toBe('my-app:');
    expect(await page.getByRole('status').textContent()).toContain('2 leases with prefix “my-app:”');
  });

  it('shows a released lease as available with an empty bar', async () => {
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
