/** The longest part of a received string a message echoes, in characters. */
const RECEIVED_MAX_CHARS = 40;

/**
 * A received value as a message shows it: a string quoted and escaped as JSON (format and separator
 * characters too, so a value cannot reorder or split a log line), cut at 40 characters with its
 * length said; a number or boolean as written; an object or array by its kind only.
 */
export function describeReceived(value: unknown): string {
  if (typeof value === 'string') {
    const chars = [...value];
    const shown = JSON.stringify(chars.slice(0, RECEIVED_MAX_CHARS).join('')).replace(
      /[\p{Cf}\p{Zl}\p{Zp}]/gu,
      (c) => {
        const hex = (c.codePointAt(0) as number).toString(16);
        return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex.padStart(4, '0')}`;
      },
    );
    return chars.length > RECEIVED_MAX_CHARS ? `${shown}… (${chars.length} characters)` : shown;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value === 'object' ? 'JSON object' : typeof value}`;
}
