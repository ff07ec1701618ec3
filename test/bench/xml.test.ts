import { describe, expect, it } from 'vitest';
import { escapeXml } from '../../scripts/xml.js';

describe('escapeXml (the bench plots and the chaos timeline)', () => {
  it('escapes the five XML special characters', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  });

  it('leaves text without special characters as it is', () => {
    expect(escapeXml('leader-1 / w2: token 7')).toBe('leader-1 / w2: token 7');
  });
});
