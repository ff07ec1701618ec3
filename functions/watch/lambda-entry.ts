import { watchDepsFromEnvironment, type WatchDeps } from './watch-deps.js';

/** Like runtime.ts's lambdaEntry, for the watch handlers: built from the environment on first use. */
export function watchEntry<E, R>(factory: (deps: WatchDeps) => (event: E) => Promise<R>): (event: E) => Promise<R> {
  let built: ((event: E) => Promise<R>) | undefined;
  const build = () => (built ??= factory(watchDepsFromEnvironment()));
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) build();
  return (event) => build()(event);
}
