import { describe, expect, it } from 'vitest';
import { memberLoadText, metadataCell } from '../../local/page/lease-rows.js';

describe('the lease page shows a load-balanced member’s load', () => {
  it('shows a membership’s published report as its total load, capacity and count, with the JSON in the tooltip', () => {
    const metadata = { lh: { c: 2, l: { '0': 12.5, '3': 30, '7': 77.5 } } };
    expect(metadataCell(metadata)).toEqual({ text: 'load 120 · capacity 2 · 3 reported', title: JSON.stringify(metadata, null, 2), none: false });
  });

  it('leaves any other metadata as JSON, and a malformed report without numbers at zero', () => {
    expect(memberLoadText({ role: 'primary' })).toBeUndefined();
    expect(memberLoadText(['lh'])).toBeUndefined();
    expect(memberLoadText({ lh: { c: 'x', l: { a: 'y' } } })).toBe('load 0 · capacity 1 · 0 reported');
    expect(metadataCell({ role: 'primary' }).text).toBe('{"role":"primary"}');
  });
});
