#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

try {
  process.exitCode = await main(process.argv);
} catch (error) {
  // User input never throws (DESIGN.md); reaching here is a bug in nftsim. Say so, without a
  // stack trace, and exit 2 as for any error.
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`nftsim: internal error: ${message}\n(set NFTSIM_DEBUG=1 for details)\n`);
  if (process.env.NFTSIM_DEBUG) process.stderr.write(`${error instanceof Error ? error.stack : ''}\n`);
  process.exitCode = 2;
}
