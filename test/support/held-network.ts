import { request as httpRequest } from 'node:http';
import type { LocalRegion, LocalRegions } from '../../local/regions/regions.js';

/**
 * A network in which requests to one Region outlive the SDK's abort, as with a real partition (TCP
 * keeps retransmitting what it already accepted): the SDK's call rejects at its abort, and the
 * request itself carries on until the Region heals, its answer kept for the test in `late`.
 */

export interface HeldAnswer {
  status: number;
  body: { error?: { code: string; reason?: string }; lease?: { holder: string; token: number }; permit?: { holder: string; token: number } };
}

export interface HeldRequest {
  path: string;
  /** The request as it was sent: headers (lower-case names) and body. */
  headers: Record<string, string>;
  body: string | undefined;
  answer: Promise<HeldAnswer>;
}

/** A fetch whose requests to `held` outlive the SDK's abort (in `late`); `hits` names the Region of each request, in order. */
export function networkThatHolds(regions: LocalRegions, held: LocalRegion) {
  const late: HeldRequest[] = [];
  const hits: string[] = [];
  const byPort = new Map(regions.regions.map((r) => [String(r.port), r.name]));
  const fetchThrough = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(String(input));
    hits.push(byPort.get(url.port) ?? '?');
    if (url.port !== String(held.port)) return fetch(input, { ...init, redirect: 'manual' });
    const headers = Object.fromEntries(Object.entries((init.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    const body = typeof init.body === 'string' ? init.body : undefined;
    const answer = rawRequest(url, init.method ?? 'GET', headers, body);
    late.push({ path: url.pathname, headers, body, answer });
    return new Promise<Response>((resolve, reject) => {
      init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      answer.then((a) => resolve(new Response(JSON.stringify(a.body), { status: a.status, headers: { 'content-type': 'application/json' } })), reject);
    });
  };
  return { fetch: fetchThrough as typeof fetch, late, hits };
}

/** One HTTP request with no time limit of its own: it lasts as long as the network holds it. */
export function rawRequest(url: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<HeldAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as HeldAnswer['body'] }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
