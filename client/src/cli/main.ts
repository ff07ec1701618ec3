#!/usr/bin/env node
/// <reference types="node" />
import { readFileSync } from 'node:fs';
import { isLeaseLostError, isLeaseholdError } from '../protocol/index.js';
import { EXIT_CODE_HELP, ExitCode, UsageError, exitCodeFor, hintFor } from './exit-codes.js';
import { nearestName } from './nearest.js';

/**
 * `leasehold`: the command line of the SDK. Each command lives in its own module and is loaded only
 * when used, so `leasehold describe` starts fast and the supervisor of `run` loads almost nothing.
 */

interface CommandModule {
  help: string;
  run(argv: string[]): Promise<number>;
}

const COMMANDS: Record<string, () => Promise<CommandModule>> = {
  describe: async () => {
    const m = await import('./lease-commands.js');
    return { help: m.DESCRIBE_HELP, run: m.describeCommand };
  },
  list: async () => {
    const m = await import('./lease-commands.js');
    return { help: m.LIST_HELP, run: m.listCommand };
  },
  acquire: async () => {
    const m = await import('./lease-commands.js');
    return { help: m.ACQUIRE_HELP, run: m.acquireCommand };
  },
  renew: async () => {
    const m = await import('./lease-commands.js');
    return { help: m.RENEW_HELP, run: m.renewCommand };
  },
  release: async () => {
    const m = await import('./lease-commands.js');
    return { help: m.RELEASE_HELP, run: m.releaseCommand };
  },
  revoke: async () => {
    const m = await import('./lease-commands.js');
    return { help: m.REVOKE_HELP, run: m.revokeCommand };
  },
  run: async () => {
    const m = await import('./run.js');
    return { help: m.RUN_HELP, run: m.runCommand };
  },
  sidecar: async () => {
    const m = await import('./sidecar.js');
    return { help: m.SIDECAR_HELP, run: m.sidecarCommand };
  },
};

const HELP = `Usage: leasehold <command> [options]

Leases and leader election with fencing tokens, from the shell.

Commands:
  describe NAME                           show a lease: holder, token, time left, transitions
  describe --rwlock NAME                  show a shared/exclusive lease: holders, modes, tokens, waiting writer
  list [--prefix P]                       list leases
  acquire NAME --holder H [--ttl 15s]     ask for a lease once; prints the grant (token, lease id)
  renew NAME --lease-id ID --token T      extend a grant (or --from-stdin with acquire --json)
  release NAME --lease-id ID --token T    give a grant up
  revoke NAME --reason TEXT [--force]     operators: take the current grant away (audited); it names
              [--token N]                 the grant describe shows, or N, and changes nothing once it moved on
  revoke --rwlock NAME --reason TEXT      … every live grant of a shared/exclusive lease
  run NAME [--ttl 15s] -- COMMAND ARGS…   run COMMAND only while leading NAME (fail-closed)
  run --shared NAME -- COMMAND ARGS…      run COMMAND while holding a shared grant of the rwlock NAME
  run --exclusive NAME -- COMMAND ARGS…   … or its exclusive grant: alone, after the shared ones
  sidecar NAME --port 8080                hold NAME for a main container: GET /leader, /healthz, /metrics

Every command: --endpoint URL (env LEASEHOLD_ENDPOINT, default http://127.0.0.1:8787; repeat it,
or list them comma-separated, for the APIs of several Regions, the preferred one first),
--sigv4 (env LEASEHOLD_SIGV4=1; signs every endpoint, else only *.amazonaws.com ones are signed),
--region R, --profile P, --timeout D, --json (one-shot commands), -h/--help. Durations: 15s, 1500ms, 2m.

Run \`leasehold <command> --help\` for a command's options and examples.

${EXIT_CODE_HELP}`;

function version(): string {
  // client/package.json: two levels up from both src/cli/main.ts and dist/cli/main.js.
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

/** Prints what went wrong and what to do about it; returns the exit code. */
function report(error: unknown, command: string | undefined, json: boolean): number {
  const code = exitCodeFor(error);
  if (error instanceof UsageError) {
    const where = error.command ?? command;
    process.stderr.write(`leasehold${where ? ` ${where}` : ''}: ${error.message}\nRun \`leasehold ${where ? `${where} ` : ''}--help\` for usage.\n`);
  } else if (isLeaseholdError(error)) {
    const hint = hintFor(error, command);
    process.stderr.write(`leasehold: ${error.message}\n  ${hint}\n`);
    // LEASE_LOST carries the server's reason as data, for scripts that branch on it.
    const reason = isLeaseLostError(error) ? error.serverReason : undefined;
    if (json) process.stdout.write(`${JSON.stringify({ error: { code: error.code, ...(reason === undefined ? {} : { reason }), message: error.message, hint } })}\n`);
  } else if (code === ExitCode.INVALID) {
    process.stderr.write(`leasehold${command ? ` ${command}` : ''}: ${(error as Error).message}\n`);
  } else {
    // The stack only helps when debugging this tool: LEASEHOLD_DEBUG=1 shows it.
    const detail = error instanceof Error ? (process.env.LEASEHOLD_DEBUG ? (error.stack ?? error.message) : error.message) : String(error);
    process.stderr.write(`leasehold: ${detail}\n`);
  }
  return code;
}

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '__supervise') {
    const { runSupervisor } = await import('./supervisor.js');
    runSupervisor();
    return -1; // lives on until its command exits
  }
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    const topic = first === 'help' ? rest[0] : undefined;
    if (topic !== undefined && COMMANDS[topic]) {
      process.stdout.write(`${(await (COMMANDS[topic] as () => Promise<CommandModule>)()).help}\n`);
      return ExitCode.OK;
    }
    process.stdout.write(`${HELP}\n`);
    return first === undefined ? ExitCode.INVALID : ExitCode.OK;
  }
  if (first === '--version' || first === '-v') {
    process.stdout.write(`${version()}\n`);
    return ExitCode.OK;
  }
  const load = COMMANDS[first];
  if (load === undefined) {
    const nearest = nearestName(first, Object.keys(COMMANDS));
    return report(new UsageError(`unknown command "${first}" (expected ${Object.keys(COMMANDS).join(', ')}).${nearest ? ` Did you mean ${nearest}?` : ''}`), undefined, false);
  }
  const command = await load();
  // `--help` anywhere before a `--` (after it, it belongs to run's command).
  const ownArgs = rest.indexOf('--') === -1 ? rest : rest.slice(0, rest.indexOf('--'));
  if (ownArgs.includes('--help') || ownArgs.includes('-h')) {
    process.stdout.write(`${command.help}\n`);
    return ExitCode.OK;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    return report(error, first, ownArgs.includes('--json'));
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`leasehold: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(ExitCode.INTERNAL);
  },
);
