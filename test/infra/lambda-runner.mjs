// Runs bundled Lambda handlers the way the Node.js Lambda runtime does: a plain Node process, the
// native ESM loader, environment read at import (the cold start). The test drives it over IPC:
//   { type: 'load', id, url, functionName }  → { ok: true } once `import(url)` has finished
//   { type: 'invoke', id, event }            → { ok: true, result, output }
// `output` is what the invocation wrote to stdout/stderr (Powertools EMF lines, warnings).
// Plain JavaScript on purpose: nothing here may be transformed on the way to Node.

const handlers = new Map();

/** The context the test built (local/lambda-context.ts `lambdaContextData`), given the methods `lambdaContext` gives it. */
function lambdaContext({ remainingMs, ...data }) {
  return {
    ...data,
    getRemainingTimeInMillis: () => remainingMs,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

async function captured(fn) {
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((s) => s.write);
  let output = '';
  for (const stream of streams) {
    stream.write = (chunk, ...rest) => {
      output += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const callback = rest.find((r) => typeof r === 'function');
      callback?.();
      return true;
    };
  }
  try {
    return { value: await fn(), output };
  } finally {
    streams.forEach((stream, i) => (stream.write = originals[i]));
  }
}

process.on('message', async (message) => {
  try {
    if (message.type === 'load') {
      process.env.AWS_LAMBDA_FUNCTION_NAME = message.functionName;
      const module = await import(message.url);
      if (typeof module.handler !== 'function') throw new Error(`${message.url} exports no handler function`);
      handlers.set(message.id, { handler: module.handler });
      process.send({ seq: message.seq, ok: true });
    } else if (message.type === 'invoke') {
      const { handler } = handlers.get(message.id);
      const { value, output } = await captured(() => handler(message.event, lambdaContext(message.context)));
      process.send({ seq: message.seq, ok: true, result: value, output });
    }
  } catch (error) {
    process.send({ seq: message.seq, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
});

process.send({ ready: true });
