/**
 * The lease table's schema (a module of its own, so a handler that needs the names does not bundle
 * the table-creation code of lease-table.ts), shared by the CDK construct, the local server and the tests so the
 * three can never disagree.
 */
export const LEASE_TABLE_SCHEMA = {
  partitionKey: 'pk',
  /** Epoch seconds after which DynamoDB TTL may delete an idle lease item. */
  ttlAttribute: 'expireItemAt',
  /**
   * The sparse group index: only items with a `leaseGroup` are in it, keyed by group then name, keys
   * only. Its keys change only when a grant joins or leaves a group, so renewals write nothing to it.
   */
  groupIndex: { indexName: 'group-index', partitionKey: 'leaseGroup', sortKey: 'pk' },
} as const;
