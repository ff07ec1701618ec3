import { describe, expect, it } from 'vitest';
import type { HistoryRecord } from '../../chaos/history.js';
import { leadershipBars, renderTimelineSvg } from '../../chaos/timeline-svg.js';
import { acquireHeld, acquireOk, event, releaseOk, renewLost, renewOk, write } from './support/history-builders.js';

/**
 * Well-formedness without an XML dependency: every tag is closed in order, attributes are quoted,
 * and no bare `&` or `<` appears in text. Returns the element names in document order.
 */
function wellFormedElements(svg: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let at = 0;
  for (let m = token.exec(svg); m !== null; m = token.exec(svg)) {
    at = token.lastIndex;
    const [, closing, name, , selfClosing, text] = m;
    if (text !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos);)/.test(text)) throw new Error(`bare & in text: ${text}`);
      continue;
    }
    if (closing) {
      if (open.pop() !== name) throw new Error(`</${name}> does not close the open element`);
    } else {
      names.push(name!);
      if (!selfClosing) open.push(name!);
    }
  }
  if (at !== svg.length) throw new Error(`not well-formed at offset ${at}: ${svg.slice(at, at + 40)}`);
  if (open.length > 0) throw new Error(`unclosed: ${open.join(', ')}`);
  return names;
}

const history: HistoryRecord[] = [
  acquireOk('w1', [0, 10], 5),
  renewOk('w1', [300, 310], 5, { localDeadlineMs: 1_250 }),
  write('w1', [400, 410], 'job-1', 5, true, 1_250),
  acquireHeld('w2', [420, 430]),
  event('stop', 'w1', 500),
  event('cont', 'w1', 1_500),
  renewLost('w1', [1_510, 1_520], 5),
  acquireOk('w2', [1_400, 1_410], 6),
  releaseOk('w2', [1_900, 1_910], 6),
  event('kill', 'w3 <&>', 2_000),
];

describe('timeline SVG', () => {
  it('is a well-formed SVG document', () => {
    const svg = renderTimelineSvg(history, { ttlMs: 1_000 });
    const elements = wellFormedElements(svg.trim());
    expect(elements[0]).toBe('svg');
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
  });

  it('draws one row per lease and process, labelled', () => {
    const svg = renderTimelineSvg(history);
    expect(svg.match(/<g class="row"/g)).toHaveLength(2);
    expect(svg).toContain('>orders / w1</text>');
    expect(svg).toContain('>orders / w2</text>');
  });

  it('labels each leadership bar with its token', () => {
    const svg = renderTimelineSvg(history);
    expect(svg).toMatch(/<rect class="lead" data-token="5" data-ended-by="deadline"/);
    expect(svg).toMatch(/<rect class="lead" data-token="6" data-ended-by="release"/);
    expect(svg).toContain('>t5</text>');
    expect(svg).toContain('>t6</text>');
  });

  it('draws a stop and its cont as one band, and a kill as a line, with escaped labels', () => {
    const svg = renderTimelineSvg(history);
    expect(svg.match(/class="fault-band" data-kind="stop"/g)).toHaveLength(1);
    expect(svg).toMatch(/<line class="fault" data-kind="kill"/);
    expect(svg).toContain('>kill w3 &lt;&amp;&gt;</text>');
    expect(svg).not.toContain('>cont w1</text>');
  });

  it('marks fenced writes on the writer’s row', () => {
    expect(renderTimelineSvg(history).match(/<rect class="write"/g)).toHaveLength(1);
  });

  it('renders an empty history as an empty, well-formed picture', () => {
    expect(() => wellFormedElements(renderTimelineSvg([]).trim())).not.toThrow();
  });
});

describe('leadership bars', () => {
  const ops = history.filter((r) => r.type === 'op');
  const events = history.filter((r) => r.type === 'event');

  it('end at the local deadline the leader relied on, its release, or a lease-lost answer, whichever came first', () => {
    expect(leadershipBars(ops, events, 1_000, 2_000)).toEqual([
      { lease: 'orders', process: 'w1', token: 5, startMs: 10, endMs: 1_250, endedBy: 'deadline' },
      { lease: 'orders', process: 'w2', token: 6, startMs: 1_410, endMs: 1_900, endedBy: 'release' },
    ]);
  });

  it('end at a kill of the leader', () => {
    const bars = leadershipBars([acquireOk('w1', [0, 10], 5)], [event('kill', 'w1', 300)], 1_000, 5_000);
    expect(bars[0]).toMatchObject({ endMs: 300, endedBy: 'kill' });
  });

  it('without a recorded deadline, end at the last acquire or renew plus the ttl', () => {
    const bars = leadershipBars([acquireOk('w1', [0, 10], 5), renewOk('w1', [500, 510], 5)], [], 1_000, 5_000);
    expect(bars[0]).toMatchObject({ endMs: 1_500, endedBy: 'deadline' });
  });
});
