/**
 * AWS Signature Version 4 for one request, on the platform's Web Crypto (`crypto.subtle`) alone.
 *
 * Why not `@smithy/signature-v4`: its CommonJS build (what a bundler picks for Node) pulls in most of
 * `@smithy/core`, about 150 KiB minified, into every Lambda that imports the SDK, and ~30 ms of
 * import time, for what is five HMACs and a canonical string (see BENCHMARKS.md, "Lambda bundle").
 * The canonical forms below follow that package (and the SigV4 specification) exactly for what
 * this SDK sends: paths are normalized and URI-encoded a second time (every service but S3), query
 * keys and values are sorted and encoded, header values are trimmed with inner whitespace folded,
 * and headers that proxies rewrite are never signed. The tests verify the result against
 * `@smithy/signature-v4` (the local server's verifier).
 */

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SigV4Input {
  method: string;
  url: URL;
  /** Lower-case names; `host` is added from the URL. */
  headers: Record<string, string>;
  body: string | undefined;
  credentials: SigV4Credentials;
  region: string;
  service: string;
  /** Signing time (wall clock; SigV4 is dated). */
  date: Date;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
/** Never signed: hop-by-hop or rewritten on the way (the same list as `@smithy/signature-v4`). */
const UNSIGNABLE = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);

const encoder = new TextEncoder();
const subtle = () => globalThis.crypto.subtle;

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function sha256Hex(text: string): Promise<string> {
  return hex(await subtle().digest('SHA-256', encoder.encode(text)));
}

async function hmac(key: ArrayBuffer | Uint8Array<ArrayBuffer>, text: string): Promise<ArrayBuffer> {
  const cryptoKey = await subtle().importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return subtle().sign('HMAC', cryptoKey, encoder.encode(text));
}

/** RFC 3986 encoding: encodeURIComponent plus the four characters it leaves alone. */
function escapeUri(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length > 0 && path.endsWith('/') ? '/' : ''}`;
  return escapeUri(normalized).replace(/%2F/g, '/');
}

function canonicalQuery(params: URLSearchParams): string {
  const pairs: Array<[string, string]> = [];
  for (const [key, value] of params) {
    if (key.toLowerCase() === 'x-amz-signature') continue;
    pairs.push([escapeUri(key), escapeUri(value)]);
  }
  pairs.sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

/** The headers to add to the request: authorization, x-amz-date, x-amz-content-sha256 and, with a session, x-amz-security-token. */
export async function signSigV4(input: SigV4Input): Promise<Record<string, string>> {
  const { credentials, region, service } = input;
  const amzDate = input.date.toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const payloadHash = await sha256Hex(input.body ?? '');
  const added: Record<string, string> = { 'x-amz-date': amzDate, 'x-amz-content-sha256': payloadHash };
  if (credentials.sessionToken) added['x-amz-security-token'] = credentials.sessionToken;

  const headers = new Map<string, string>();
  for (const [name, value] of Object.entries({ ...input.headers, ...added, host: input.url.host })) {
    const lower = name.toLowerCase();
    if (UNSIGNABLE.has(lower) || lower.startsWith('proxy-') || lower.startsWith('sec-') || lower === 'date') continue;
    headers.set(lower, value.replace(/[\r\n]/g, ' ').replace(/[ \t]+/g, ' ').replace(/^ | $/g, ''));
  }
  const names = [...headers.keys()].sort();
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    input.method.toUpperCase(),
    canonicalPath(input.url.pathname),
    canonicalQuery(input.url.searchParams),
    ...names.map((name) => `${name}:${headers.get(name)}`),
    '',
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = `${ALGORITHM}\n${amzDate}\n${scope}\n${await sha256Hex(canonicalRequest)}`;
  let key = await hmac(encoder.encode(`AWS4${credentials.secretAccessKey}`), day);
  for (const part of [region, service, 'aws4_request']) key = await hmac(key, part);
  const signature = hex(await hmac(key, stringToSign));
  return { ...added, authorization: `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}` };
}
