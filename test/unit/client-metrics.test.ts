import { describe, expect, it } from 'vitest';
import { LeaderMetrics, PROMETHEUS_CONTENT_TYPE } from 'leasehold';

function recorded() {
  const metrics = new LeaderMetrics();
  const base = { name: 'jobs', holder: 'me', token: 7 };
  metrics.record({ type: 'elected', ...base });
  metrics.record({ type: 'renewed', ...base });
  metrics.record({ type: 'renewed', ...base });
  metrics.record({ type: 'renewFailed', ...base, error: new Error('down') });
  metrics.record({ type: 'lost', ...base, reason: 'expired' });
  metrics.record({ type: 'elected', ...base, token: 8 });
  metrics.record({ type: 'lost', ...base, token: 8, reason: 'releasedElsewhere' });
  metrics.record({ type: 'elected', ...base, token: 9 });
  metrics.record({ type: 'healthCheckFailed', ...base, token: 9, failure: 'timeout', consecutive: 1 });
  return metrics;
}

describe('LeaderMetrics', () => {
  it('counts terms, renewals, renewal failures, health check failures and losses by reason from leader events', () => {
    const metrics = recorded();
    expect(metrics.value('leader_acquired_total', { lease: 'jobs' })).toBe(3);
    expect(metrics.value('leader_renewals_total', { lease: 'jobs' })).toBe(2);
    expect(metrics.value('leader_renewal_failures_total', { lease: 'jobs' })).toBe(1);
    expect(metrics.value('leader_lost_total', { lease: 'jobs', reason: 'expired' })).toBe(1);
    expect(metrics.value('leader_lost_total', { lease: 'jobs', reason: 'releasedElsewhere' })).toBe(1);
    expect(metrics.value('leader_lost_total', { lease: 'jobs', reason: 'released' })).toBe(0);
    expect(metrics.value('leader_lost_total', { lease: 'jobs', reason: 'paused' })).toBe(0);
    expect(metrics.value('leader_health_check_failures_total', { lease: 'jobs' })).toBe(1);
    expect(metrics.value('leader_is_leader', { lease: 'jobs' })).toBe(1);
  });

  it('renders the Prometheus text format with HELP, TYPE and every loss reason', () => {
    expect(recorded().render()).toBe(
      [
        '# HELP leader_acquired_total Terms won: successful acquires that made this process leader.',
        '# TYPE leader_acquired_total counter',
        'leader_acquired_total{lease="jobs"} 3',
        '# HELP leader_lost_total Terms ended, by reason (superseded, expired, released, releasedElsewhere, stopped, paused, unhealthy, deadline, revoked, yielded).',
        '# TYPE leader_lost_total counter',
        'leader_lost_total{lease="jobs",reason="superseded"} 0',
        'leader_lost_total{lease="jobs",reason="expired"} 1',
        'leader_lost_total{lease="jobs",reason="released"} 0',
        'leader_lost_total{lease="jobs",reason="releasedElsewhere"} 1',
        'leader_lost_total{lease="jobs",reason="stopped"} 0',
        'leader_lost_total{lease="jobs",reason="paused"} 0',
        'leader_lost_total{lease="jobs",reason="unhealthy"} 0',
        'leader_lost_total{lease="jobs",reason="deadline"} 0',
        'leader_lost_total{lease="jobs",reason="revoked"} 0',
        'leader_lost_total{lease="jobs",reason="yielded"} 0',
        '# HELP leader_renewals_total Successful renewals of a held lease.',
        '# TYPE leader_renewals_total counter',
        'leader_renewals_total{lease="jobs"} 2',
        '# HELP leader_renewal_failures_total Failed renewal attempts (each is retried until the deadline).',
        '# TYPE leader_renewal_failures_total counter',
        'leader_renewal_failures_total{lease="jobs"} 1',
        '# HELP leader_health_check_failures_total Failed health checks: returned false, threw, or timed out.',
        '# TYPE leader_health_check_failures_total counter',
        'leader_health_check_failures_total{lease="jobs"} 1',
        '# HELP leader_is_leader 1 while this process leads the lease, else 0.',
        '# TYPE leader_is_leader gauge',
        'leader_is_leader{lease="jobs"} 1',
        '',
      ].join('\n'),
    );
    expect(PROMETHEUS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('keeps one series per lease, sorted by name', () => {
    const metrics = new LeaderMetrics();
    metrics.record({ type: 'elected', name: 'b', holder: 'me', token: 1 });
    metrics.record({ type: 'elected', name: 'a', holder: 'me', token: 1 });
    const series = metrics.samples().filter((s) => s.name === 'leader_is_leader');
    expect(series).toEqual([
      { name: 'leader_is_leader', labels: { lease: 'a' }, value: 1 },
      { name: 'leader_is_leader', labels: { lease: 'b' }, value: 1 },
    ]);
  });

  it('renders no series before any event', () => {
    expect(new LeaderMetrics().samples()).toEqual([]);
  });
});
