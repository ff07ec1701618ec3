// A Lambda on a schedule: EventBridge may deliver twice or overlap; withLease runs one sweep at a time.
import type { Context, ScheduledEvent } from 'aws-lambda';
import { LeaseClient, sigv4Signer, withLease } from 'leasehold';

// Created once per sandbox; the Lambda role's credentials are picked up automatically.
const client = new LeaseClient({
  endpoint: process.env.LEASEHOLD_URL ?? 'https://abc123.execute-api.eu-west-1.amazonaws.com',
  signer: sigv4Signer(),
});

export async function handler(_event: ScheduledEvent, context: Context) {
  const result = await withLease(
    client,
    'billing-sweep',
    { holder: context.awsRequestId, ttlMs: 30_000 },
    ({ token, signal }) => sweepInvoices(token, signal), // renewed in the background, released after
  );
  if (!result.acquired) return { skipped: true, heldBy: result.lease.holder };
  return { swept: result.value, token: result.token };
}

async function sweepInvoices(token: number, signal: AbortSignal): Promise<number> {
  let swept = 0;
  for (const invoice of ['inv-1', 'inv-2', 'inv-3']) {
    signal.throwIfAborted(); // the lease is gone (or the sandbox was frozen): stop
    await fetch(`https://billing.internal/invoices/${invoice}/close`, { method: 'POST', headers: { 'x-fencing-token': String(token) }, signal });
    swept += 1;
  }
  return swept;
}
