import type { Server } from 'node:net';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** What the local fronts share: listening (a taken port rejects instead of throwing later), and an answer's headers as node:http writes them. */

export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** A handler result's headers as strings (API Gateway allows numbers and booleans). */
export function answerHeaders(headers: APIGatewayProxyStructuredResultV2['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers ?? {})) out[key] = String(value);
  return out;
}
