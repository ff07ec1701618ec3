import { ValidationError, validateName } from '../client/src/protocol/index.js';

/**
 * The opaque `cursor` of a paged read (list, a group): the last lease name of the page, as
 * base64url JSON. Only a name that passes the name rule decodes, so a forged cursor is a
 * VALIDATION_ERROR, never a strange DynamoDB key.
 */
export function encodeCursor(key: { pk: string }): string {
  return Buffer.from(JSON.stringify({ pk: key.pk }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string, read = 'list call'): { pk: string } {
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof key === 'object' && key !== null && typeof (key as { pk?: unknown }).pk === 'string') {
      validateName((key as { pk: string }).pk);
      return { pk: (key as { pk: string }).pk };
    }
  } catch {
    // fall through to the validation error below
  }
  throw new ValidationError('cursor', `must be a cursor returned by a previous ${read}`);
}
