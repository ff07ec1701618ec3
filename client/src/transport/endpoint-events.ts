import type { Endpoint } from './endpoints.js';

/**
 * Which endpoint (which Region) serves a client, told as it happens: an `attempt` event for every
 * attempt at an endpoint, and a `switched` event when the endpoint that answers changes, so that a
 * failover to another Region and the return to the preferred one are seen. `EndpointMetrics` turns
 * them into a counter per endpoint. Labels are the endpoints' `label`s: origin and base path,
 * never credentials.
 */

export type EndpointEvent =
  /**
   * One attempt at `endpoint` ended. `answered`: it gave an answer (a grant, a 409, a 404...);
   * `failed`: it could not serve the request (unreachable, timed out, 5xx, throttled) and the
   * request went on to the next endpoint or to a retry.
   */
  | { type: 'attempt'; endpoint: string; region: string | undefined; outcome: 'answered' | 'failed' }
  /**
   * Requests are now answered by `to`, after `from` (the endpoint that answered before; the first
   * answer of a client is not a switch). `back`: `to` comes before `from` in the preference order
   * (the preferred Region serves again); otherwise requests failed over to a less preferred one.
   */
  | { type: 'switched'; from: string; to: string; region: string | undefined; back: boolean };

/** A hook for endpoint events: the client's `onEndpointEvent`. Errors thrown by it are ignored. */
export type EndpointEventHook = (event: EndpointEvent) => void;

/** Follows which endpoint answered last, and tells the hook of each attempt and each switch. */
export class EndpointTracker {
  private servingIndex: number | undefined;

  constructor(
    private readonly endpoints: readonly Endpoint[],
    private readonly hook: EndpointEventHook | undefined,
  ) {}

  /** The endpoint that answered the latest request; undefined before any answered. */
  get serving(): Endpoint | undefined {
    return this.servingIndex === undefined ? undefined : this.endpoints[this.servingIndex];
  }

  answered(endpoint: Endpoint): void {
    this.tell({ type: 'attempt', endpoint: endpoint.label, region: endpoint.region, outcome: 'answered' });
    const index = this.endpoints.indexOf(endpoint);
    const before = this.servingIndex;
    this.servingIndex = index;
    if (before === undefined || before === index) return;
    const from = this.endpoints[before] as Endpoint;
    this.tell({ type: 'switched', from: from.label, to: endpoint.label, region: endpoint.region, back: index < before });
  }

  failed(endpoint: Endpoint): void {
    this.tell({ type: 'attempt', endpoint: endpoint.label, region: endpoint.region, outcome: 'failed' });
  }

  private tell(event: EndpointEvent): void {
    if (this.hook === undefined) return;
    try {
      this.hook(event);
    } catch {
      // A broken hook must not break a request.
    }
  }
}

export type EndpointMetricName = 'endpoint_attempts_total' | 'endpoint_switches_total' | 'endpoint_serving';

export interface EndpointSample {
  name: EndpointMetricName;
  labels: Record<string, string>;
  value: number;
}

interface Counters {
  region: string | undefined;
  answered: number;
  failed: number;
  switchesTo: number;
  serving: 0 | 1;
}

/**
 * Endpoint metrics, fed by the client's `onEndpointEvent` and rendered in the Prometheus text format
 * (as `LeaderMetrics`, whose `render()` output it can follow in one response):
 * - `endpoint_attempts_total{endpoint,region,outcome}`: attempts per endpoint, `answered` or `failed`;
 * - `endpoint_switches_total{endpoint,region}`: how often requests moved to this endpoint;
 * - `endpoint_serving{endpoint,region}`: 1 for the endpoint that answered last, else 0.
 *
 *     const endpointMetrics = new EndpointMetrics();
 *     const client = new LeaseClient({ endpoints, onEndpointEvent: endpointMetrics.record });
 */
export class EndpointMetrics {
  private readonly byEndpoint = new Map<string, Counters>();

  /** The hook: pass it as a client's `onEndpointEvent`. */
  readonly record = (event: EndpointEvent): void => {
    if (event.type === 'attempt') {
      const counters = this.countersFor(event.endpoint, event.region);
      if (event.outcome === 'failed') {
        counters.failed += 1;
        return;
      }
      counters.answered += 1;
      for (const other of this.byEndpoint.values()) other.serving = 0;
      counters.serving = 1;
      return;
    }
    this.countersFor(event.to, event.region).switchesTo += 1;
  };

  /** Every sample, by endpoint in the order first seen. */
  samples(): EndpointSample[] {
    const out: EndpointSample[] = [];
    const entries = [...this.byEndpoint];
    const labelsOf = (endpoint: string, c: Counters) => ({ endpoint, ...(c.region === undefined ? {} : { region: c.region }) });
    for (const [endpoint, c] of entries) {
      out.push({ name: 'endpoint_attempts_total', labels: { ...labelsOf(endpoint, c), outcome: 'answered' }, value: c.answered });
      out.push({ name: 'endpoint_attempts_total', labels: { ...labelsOf(endpoint, c), outcome: 'failed' }, value: c.failed });
    }
    for (const [endpoint, c] of entries) out.push({ name: 'endpoint_switches_total', labels: labelsOf(endpoint, c), value: c.switchesTo });
    for (const [endpoint, c] of entries) out.push({ name: 'endpoint_serving', labels: labelsOf(endpoint, c), value: c.serving });
    return out;
  }

  /** One sample's value (0 if never recorded). */
  value(name: EndpointMetricName, labels: Record<string, string>): number {
    const found = this.samples().find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    return found?.value ?? 0;
  }

  /** The Prometheus text exposition format (version 0.0.4), ending with a newline. */
  render(): string {
    const samples = this.samples();
    const lines: string[] = [];
    for (const [name, type, help] of FAMILIES) {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const sample of samples) {
        if (sample.name !== name) continue;
        const labels = Object.entries(sample.labels)
          .map(([key, value]) => `${key}="${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
          .join(',');
        lines.push(`${name}{${labels}} ${sample.value}`);
      }
    }
    return `${lines.join('\n')}\n`;
  }

  private countersFor(endpoint: string, region: string | undefined): Counters {
    let counters = this.byEndpoint.get(endpoint);
    if (counters === undefined) {
      counters = { region, answered: 0, failed: 0, switchesTo: 0, serving: 0 };
      this.byEndpoint.set(endpoint, counters);
    }
    return counters;
  }
}

const FAMILIES: ReadonlyArray<[EndpointMetricName, 'counter' | 'gauge', string]> = [
  ['endpoint_attempts_total', 'counter', 'Attempts per endpoint: answered, or failed (unreachable, timed out, 5xx, throttled) and sent on.'],
  ['endpoint_switches_total', 'counter', 'How often requests moved to this endpoint from another (a failover, or the return to a preferred one).'],
  ['endpoint_serving', 'gauge', '1 for the endpoint that answered the latest request, else 0.'],
];
