// @ts-check
// Network namespaces for the kernel tests: a sandbox whose netfilter state is its own, so the
// real tools (iptables-nft, nft) can load and list rulesets without touching the host's.
// Plain JavaScript with JSDoc, so the dump generators beside it run with `node` alone.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/**
 * @typedef {object} CommandResult
 * @property {number} status  exit status (-1 when the command could not be started)
 * @property {string} stdout
 * @property {string} stderr
 */

/**
 * Why the kernel tests cannot run here, or undefined when they can: they need root (to create
 * a namespace) and every tool in `tools` on the PATH. The reason names each missing tool.
 * @param {readonly string[]} tools
 * @returns {string | undefined}
 */
export function findKernelSkipReason(tools) {
  const reasons = [];
  if (process.getuid?.() !== 0) reasons.push('not root');
  const missing = tools.filter((tool) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool]).status !== 0);
  if (missing.length > 0) reasons.push(`missing ${missing.join(', ')}`);
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

/**
 * Creates a network namespace named `<prefix>-<pid>-<random>` and returns its name. The random
 * part keeps two runs of one test (or two tests of one process) apart.
 * @param {string} prefix
 * @returns {string}
 */
export function createNamespace(prefix) {
  const name = `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const result = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ip netns add ${name} failed: ${result.stderr.trim()}`);
  return name;
}

/**
 * Deletes a namespace made by createNamespace; quiet when it is already gone, so it can run in
 * every cleanup path.
 * @param {string} name
 */
export function deleteNamespace(name) {
  spawnSync('ip', ['netns', 'del', name]);
}

/**
 * Runs `args` inside the namespace with `input` on stdin. Never throws on a failing command: the
 * caller decides what a non-zero status means.
 * @param {string} name
 * @param {readonly string[]} args
 * @param {string} [input]
 * @returns {CommandResult}
 */
export function runInNamespace(name, args, input) {
  const result = spawnSync('ip', ['netns', 'exec', name, ...args], {
    input,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  return { status: result.status ?? -1, stdout: result.stdout ?? '', stderr: result.stderr ?? String(result.error ?? '') };
}

/**
 * Like runInNamespace, but a non-zero status is an error. stderr is not: the tools warn there
 * (`# Warning: table ip filter is managed by iptables-nft`, a missing connlabel.conf).
 * @param {string} name
 * @param {readonly string[]} args
 * @param {string} [input]
 * @returns {string} stdout
 */
export function runInNamespaceOrThrow(name, args, input) {
  const result = runInNamespace(name, args, input);
  if (result.status !== 0) {
    throw new Error(`${args.join(' ')} in ${name} failed (status ${result.status}): ${result.stderr.trim().slice(0, 2000)}`);
  }
  return result.stdout;
}
