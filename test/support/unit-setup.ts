import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

/**
 * The unit project's promise, kept by each of its test files: no child process, no socket (so no
 * DynamoDB Local, no HTTP, no Java). A unit test that reaches for one fails at once with a message
 * that says where it belongs, instead of making the fast loop slow or flaky. Reading files is fine.
 */
function refuse(what: string): never {
  throw new Error(`A unit test may not ${what}: list the file under integration or slow in vitest.config.mts.`);
}

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`start a child process (child_process.${name})`), writable: true, configurable: true });
}
net.Socket.prototype.connect = () => refuse('open a socket');
net.Server.prototype.listen = () => refuse('listen on a socket');
// The ESM bindings (`import { spawn } from 'node:child_process'`) follow the patched CommonJS exports.
syncBuiltinESMExports();
