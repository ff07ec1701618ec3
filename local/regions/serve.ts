import { startRegionControl, type RegionControl } from './control.js';
import { startLocalRegions, type LocalRegions, type LocalRegionsOptions } from './regions.js';

/**
 * `npm start -- --regions 3`: the local Regions on ports P, P+1, P+2 (P = `--port`) and their
 * control API on P+3, all on 127.0.0.1. With port 0, each picks a free port of its own.
 */
export interface ServedRegions {
  readonly regions: LocalRegions;
  readonly control: RegionControl;
  /** What `npm start` prints: the Regions, how to take one down and bring it back, the SDK's endpoints. */
  describe(backend: string): string;
  close(): Promise<void>;
}

/** The ports `--regions N --port P` listens on: the Regions', then the control's. */
export function regionPorts(count: number, basePort: number): number[] {
  return basePort === 0 ? [] : Array.from({ length: count + 1 }, (_, i) => basePort + i);
}

export async function serveLocalRegions(options: LocalRegionsOptions & { count: number; basePort: number }): Promise<ServedRegions> {
  const regions = await startLocalRegions(options);
  let control: RegionControl;
  try {
    control = await startRegionControl(regions, { port: options.basePort === 0 ? 0 : options.basePort + options.count });
  } catch (error) {
    await regions.close();
    throw error;
  }
  return {
    regions,
    control,
    describe: (backend) => describeRegions(regions, control, backend),
    close: async () => {
      await control.close();
      await regions.close();
    },
  };
}

function describeRegions(regions: LocalRegions, control: RegionControl, backend: string): string {
  const rows = regions.regions.map((region) => {
    const clock = `clock ${region.clockOffsetMs >= 0 ? '+' : '−'}${Math.abs(region.clockOffsetMs)} ms`;
    return `  ${region.name.padEnd(10)} ${region.url.padEnd(23)} ${clock.padEnd(14)}${region.watchUrl ? ` watch ${region.watchUrl}` : ''}`;
  });
  const example = regions.regions[1] ?? regions.regions[0];
  const post = (path: string, body: string) => `  curl -s -X POST ${control.url}/regions/${example?.name}/${path} -H 'content-type: application/json' -d '${body}'`;
  const witness = regions.regions.length === 2 ? ' (and a witness, which serves no API)' : '';
  return `leasehold is serving ${regions.regions.length} Regions${witness} over one store  (backend: ${backend})

${rows.join('\n')}

Take a Region down (mode refuse, blackhole or unavailable) and bring it back:
${post('down', '{"mode":"blackhole"}')}
${post('up', '{}')}
Make its store meet replicated write conflicts ({"count":N} or {"probability":P}; {"count":0} stops):
${post('conflicts', '{"count":3}')}
Every Region's state: curl -s ${control.url}/regions

SDK: new LeaseClient({ endpoints: [${regions.regions.map((r) => `'${r.url}'`).join(', ')}] })`;
}
