import type { LeaderEvent, LossReason } from './events.js';

export interface MetricSample {
  name: MetricName;
  labels: Record<string, string>;
  value: number;
}

export type MetricName =
  | 'leader_acquired_total'
  | 'leader_lost_total'
  | 'leader_renewals_total'
  | 'leader_renewal_failures_total'
  | 'leader_health_check_failures_total'
  | 'leader_is_leader';

interface LeaseCounters {
  acquired: number;
  lost: Record<LossReason, number>;
  renewals: number;
  renewalFailures: number;
  healthCheckFailures: number;
  isLeader: 0 | 1;
}

// A record, so that a new LossReason does not compile until it is listed here (keys keep this order).
const LABELLED: Record<LossReason, true> = { superseded: true, expired: true, released: true, releasedElsewhere: true, stopped: true, paused: true, unhealthy: true, deadline: true, revoked: true, yielded: true };
const REASONS = Object.keys(LABELLED) as LossReason[];

const FAMILIES: ReadonlyArray<{
  name: MetricName;
  type: 'counter' | 'gauge';
  help: string;
  read(c: LeaseCounters): Array<[labels: Record<string, string>, value: number]>;
}> = [
  { name: 'leader_acquired_total', type: 'counter', help: 'Terms won: successful acquires that made this process leader.', read: (c) => [[{}, c.acquired]] },
  {
    name: 'leader_lost_total',
    type: 'counter',
    help: `Terms ended, by reason (${REASONS.join(', ')}).`,
    read: (c) => REASONS.map((reason) => [{ reason }, c.lost[reason]]),
  },
  { name: 'leader_renewals_total', type: 'counter', help: 'Successful renewals of a held lease.', read: (c) => [[{}, c.renewals]] },
  {
    name: 'leader_renewal_failures_total',
    type: 'counter',
    help: 'Failed renewal attempts (each is retried until the deadline).',
    read: (c) => [[{}, c.renewalFailures]],
  },
  {
    name: 'leader_health_check_failures_total',
    type: 'counter',
    help: 'Failed health checks: returned false, threw, or timed out.',
    read: (c) => [[{}, c.healthCheckFailures]],
  },
  { name: 'leader_is_leader', type: 'gauge', help: '1 while this process leads the lease, else 0.', read: (c) => [[{}, c.isLeader]] },
];

/**
 * Leader metrics, fed by the leader's `onEvent` hook and rendered in the Prometheus text format
 * (serve it from your own HTTP endpoint, or read `samples()` and push them elsewhere). Every
 * sample carries a `lease` label so one registry can serve many leaders.
 *
 *     const metrics = new LeaderMetrics();
 *     const leader = createLeader(client, { name, holder, onEvent: metrics.record });
 *     // GET /metrics → metrics.render()
 */
export class LeaderMetrics {
  private readonly leases = new Map<string, LeaseCounters>();

  /** The events hook: pass it as a leader's (or withLease's) `onEvent`. */
  readonly record = (event: LeaderEvent): void => {
    const lease = this.countersFor(event.name);
    switch (event.type) {
      case 'elected':
        lease.acquired += 1;
        lease.isLeader = 1;
        break;
      case 'renewed':
        lease.renewals += 1;
        break;
      case 'renewFailed':
        lease.renewalFailures += 1;
        break;
      case 'lost':
        lease.lost[event.reason] += 1;
        lease.isLeader = 0;
        break;
      case 'healthCheckFailed':
        lease.healthCheckFailures += 1;
        break;
      case 'following':
      case 'watch':
      case 'error':
        break;
    }
  };

  /** Every sample, counters of all loss reasons included (at 0 until they happen). */
  samples(): MetricSample[] {
    const leases = [...this.leases].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return FAMILIES.flatMap((family) =>
      leases.flatMap(([lease, counters]) =>
        family.read(counters).map(([labels, value]) => ({ name: family.name, labels: { lease, ...labels }, value })),
      ),
    );
  }

  /** One sample's value (0 if never recorded). */
  value(name: MetricName, labels: Record<string, string>): number {
    const found = this.samples().find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    return found?.value ?? 0;
  }

  /** The Prometheus text exposition format (version 0.0.4), ending with a newline. */
  render(): string {
    const samples = this.samples();
    const lines: string[] = [];
    for (const family of FAMILIES) {
      lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
      for (const sample of samples) {
        if (sample.name !== family.name) continue;
        const labels = Object.entries(sample.labels)
          .map(([key, value]) => `${key}="${escapeLabel(value)}"`)
          .join(',');
        lines.push(`${sample.name}{${labels}} ${sample.value}`);
      }
    }
    return `${lines.join('\n')}\n`;
  }

  private countersFor(lease: string): LeaseCounters {
    let counters = this.leases.get(lease);
    if (counters === undefined) {
      counters = {
        acquired: 0,
        lost: Object.fromEntries(REASONS.map((reason) => [reason, 0])) as Record<LossReason, number>,
        renewals: 0,
        renewalFailures: 0,
        healthCheckFailures: 0,
        isLeader: 0,
      };
      this.leases.set(lease, counters);
    }
    return counters;
  }
}

/** Content type to serve `render()` with. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
