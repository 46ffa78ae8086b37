import type { NodeSource } from '../parser/parse-ruleset.js';
import type { HostInput } from '../sim/host.js';

/** One side of a comparison: the files a node was captured as (or the BEFORE side plus what an
 * agent overlay installs), in the order they apply (parseNode), and the host description. */
export interface Snapshot {
  /** What the user named it by (a directory, a file list, `before + netbird@0.40`). */
  readonly label: string;
  readonly sources: readonly NodeSource[];
  readonly host?: HostInput;
}
