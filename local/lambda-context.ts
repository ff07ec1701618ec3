import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

export interface LambdaContextOptions {
  /** The function's name; also names its ARN and log group. */
  functionName: string;
  /** Lambda's id of this invocation. Default: a random UUID. */
  awsRequestId?: string;
  /** Default `local`. */
  region?: string;
  /** Default `000000000000`. */
  accountId?: string;
  /** What `getRemainingTimeInMillis()` answers, as if the invocation had just begun. Default 10 000. */
  remainingMs?: number;
  /** Default `local`. */
  logStreamName?: string;
  /** Default false: a handler's answer is sent without waiting for stray timers, as the local server needs. */
  callbackWaitsForEmptyEventLoop?: boolean;
}

/** A Lambda context as plain data (it crosses process boundaries), `remainingMs` in place of its methods. */
export type LambdaContextData = Omit<Context, 'getRemainingTimeInMillis' | 'done' | 'fail' | 'succeed'> & { remainingMs: number };

/**
 * The Lambda `Context` given to a handler called outside Lambda: by the local server for each
 * request, and by tests that call handlers (or their bundles) directly. One builder, so every
 * caller hands the handlers the same shape Lambda does.
 */
export function lambdaContext(options: LambdaContextOptions): Context {
  const { remainingMs, ...data } = lambdaContextData(options);
  return {
    ...data,
    getRemainingTimeInMillis: () => remainingMs,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/**
 * The same context as data, for a handler in another process (test/infra/lambda-runner.mjs, plain
 * JavaScript, adds the methods exactly as `lambdaContext` does).
 */
export function lambdaContextData(options: LambdaContextOptions): LambdaContextData {
  const { functionName } = options;
  return {
    callbackWaitsForEmptyEventLoop: options.callbackWaitsForEmptyEventLoop ?? false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${options.region ?? 'local'}:${options.accountId ?? '000000000000'}:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: options.awsRequestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: options.logStreamName ?? 'local',
    remainingMs: options.remainingMs ?? 10_000,
  };
}
