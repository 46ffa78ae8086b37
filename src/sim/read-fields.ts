// Strict reading of the simulator's JSON inputs (host, packet, scenarios): every problem names the
// field by its path (`packet.sport`), unknown fields are errors, never ignored (issue 4). The CLI
// turns a path into file:line:column of the JSON text.

export type FieldPath = readonly (string | number)[];

/** A problem in a simulator input, at the field `path` points to. */
export interface InputError {
  readonly path: FieldPath;
  readonly message: string;
}

export function pathText(path: FieldPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** Collects errors while reading one input. */
export class FieldReader {
  readonly errors: InputError[] = [];

  fail(path: FieldPath, message: string): undefined {
    this.errors.push({ path, message: `${pathText(path)}: ${message}` });
    return undefined;
  }

  /** The object at `path`, after checking it has no key outside `known`, and, unless `nulls` is
   * 'kept' (`ip -j` prints a flag as null), no null value. */
  object(value: unknown, path: FieldPath, known: readonly string[], nulls: 'refused' | 'kept' = 'refused'): Record<string, unknown> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return this.fail(path, 'expected an object');
    const record = value as Record<string, unknown>;
    let nullKeys: string[] | undefined;
    for (const key of Object.keys(record)) {
      if (!known.includes(key)) this.fail([...path, key], `unknown field (expected one of ${known.join(', ')})`);
      // A null (YAML's `key:` with nothing after it) is no value; a default is had by leaving
      // the field out. Its one error is this: the field's reader does not see it.
      else if (record[key] === null && nulls === 'refused') {
        this.fail([...path, key], 'expected a value, not null (leave the field out for its default)');
        (nullKeys ??= []).push(key);
      }
    }
    return nullKeys ? Object.fromEntries(Object.entries(record).filter(([key]) => !nullKeys.includes(key))) : record;
  }

  array(value: unknown, path: FieldPath): readonly unknown[] | undefined {
    if (!Array.isArray(value)) return this.fail(path, 'expected an array');
    return value;
  }

  string(value: unknown, path: FieldPath): string | undefined {
    if (typeof value !== 'string') return this.fail(path, 'expected a string');
    return value;
  }

  boolean(value: unknown, path: FieldPath): boolean | undefined {
    if (typeof value !== 'boolean') return this.fail(path, 'expected true or false');
    return value;
  }

  /** An unsigned integer below 2^bits, written as a number or a decimal/hex string (`"0x4000"`). */
  unsigned(value: unknown, path: FieldPath, bits: number): number | undefined {
    let n: number | undefined;
    if (typeof value === 'number') n = value;
    else if (typeof value === 'string' && /^(0x[0-9a-fA-F]+|\d+)$/.test(value)) n = Number(value);
    if (n === undefined || !Number.isInteger(n) || n < 0 || n >= 2 ** bits) {
      return this.fail(path, `expected an integer from 0 to ${2 ** bits - 1} (a number or "0x…")`);
    }
    return n;
  }
}
