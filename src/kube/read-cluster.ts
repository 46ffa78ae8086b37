// Reads what a user captures with kubectl (`kubectl get services,endpointslices -A -o json`, one
// List or a ServiceList and an EndpointSliceList; `kubectl get nodes -o json`; single objects; the
// same as `-o yaml`) into the Cluster that `nftsim kube-drift` checks nodes against. Only the fields
// kube-proxy reads are kept, with the API's defaults applied, so that expectedEndpoints can follow
// kube-proxy without knowing about absent fields. Problems are diagnostics at file:line:column;
// nothing throws.

import type { Span } from '../model/ast.js';
import type { Diagnostic } from '../model/diagnostic.js';
import { inputDiagnostics, parseInputText, type InputFile } from '../parser/read-input-file.js';
import { formatAddress, parseAddress, parseCidr, type AddressFamily } from '../sim/address.js';
import type { Loc } from '../sim/outcome.js';
import { FieldReader, type FieldPath } from '../sim/read-fields.js';
import type { Cluster, ClusterNode, EndpointSlice, Service, ServicePortSpec, ServiceProtocol, SliceEndpoint, TrafficPolicy } from './cluster.js';

export interface ClusterFile {
  readonly file: string;
  readonly text: string;
}

/** The kinds read; every other kind is left out with one info diagnostic per kind. */
type ReadKind = 'Service' | 'EndpointSlice' | 'Node';

/** The label that ties an EndpointSlice to its Service (discovery/v1 LabelServiceName); kube-proxy
 * ignores a slice without it (pkg/proxy/endpointslicecache.go, endpointSliceCacheKeys). */
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** core/v1 Protocol values, as ServiceProtocol. */
const PROTOCOLS: Readonly<Record<string, ServiceProtocol>> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

/** sessionAffinityConfig.clientIP.timeoutSeconds when absent (core/v1 DefaultClientIPServiceAffinitySeconds)
 * and its upper bound (MaxClientIPServiceAffinitySeconds). */
const DEFAULT_AFFINITY_SECONDS = 10800;
const MAX_AFFINITY_SECONDS = 86400;

/** Reads the cluster files. `cluster` is absent only when a file is not JSON or YAML or not a
 * Kubernetes object or list; an object with a wrong or missing field is left out of the cluster
 * with an error diagnostic naming the field. */
export function readCluster(files: readonly ClusterFile[]): { cluster?: Cluster; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const objects = new ObjectSink();
  let readable = true;
  for (const { file, text } of files) {
    const input = parseInputText(file, text, diagnostics);
    if (!input) {
      readable = false;
      continue;
    }
    const reader = new FieldReader();
    readable = readTopLevel(input, reader, objects) && readable;
    diagnostics.push(...inputDiagnostics(reader.errors, input));
  }
  diagnostics.push(...objects.diagnostics());
  if (!readable) return { diagnostics };
  return { cluster: { services: objects.services, endpointSlices: objects.endpointSlices, nodes: objects.nodes }, diagnostics };
}

/** Where the objects of all files go: duplicates (the same object in two files) are reported and
 * the first kept; other kinds are counted for one diagnostic per kind. */
class ObjectSink {
  readonly services: Service[] = [];
  readonly endpointSlices: EndpointSlice[] = [];
  readonly nodes: ClusterNode[] = [];
  private readonly seen = new Map<string, Loc>();
  private readonly duplicates: Diagnostic[] = [];
  private readonly ignored = new Map<string, { count: number; what: (count: number) => string; why: string; span?: Span }>();

  /** False for an object already read (reported here). */
  isNew(kind: ReadKind, id: string, at: Loc, span: Span | undefined): boolean {
    const key = `${kind} ${id}`;
    const first = this.seen.get(key);
    if (first) {
      this.duplicates.push({
        severity: 'warning',
        code: 'duplicate-object',
        message: `${kind} ${id} is also at ${first.file}:${first.line}:${first.column}; the first one is used`,
        ...(span && { span }),
      });
      return false;
    }
    this.seen.set(key, at);
    return true;
  }

  /** Objects of `kind` left out, or (with `what` and `why`) objects of a kind kube-drift reads
   * that kube-proxy itself skips. */
  ignore(
    kind: string,
    span: Span | undefined,
    what = (count: number) => `${kind} object${count === 1 ? '' : 's'}`,
    why = 'kube-drift reads Services, EndpointSlices and Nodes',
  ): void {
    const entry = this.ignored.get(kind);
    if (entry) entry.count++;
    else this.ignored.set(kind, { count: 1, what, why, span });
  }

  diagnostics(): Diagnostic[] {
    const ignored = [...this.ignored.values()].map(({ count, what, why, span }): Diagnostic => ({
      severity: 'info',
      code: 'ignored-kind',
      message: `ignored ${count} ${what(count)}: ${why}`,
      ...(span && { span }),
    }));
    return [...this.duplicates, ...ignored];
  }
}

/** A file's value: a list (`List`, `ServiceList`…) with items, or one object. False when it is
 * neither, so no cluster is made from it. */
function readTopLevel(input: InputFile, reader: FieldReader, sink: ObjectSink): boolean {
  const value = input.value;
  if (!isRecord(value) || typeof value.kind !== 'string') {
    reader.fail([], 'expected a Kubernetes object or list with a kind (kubectl get … -o json)');
    return false;
  }
  if (!value.kind.endsWith('List')) {
    readObject(input, reader, sink, value, [], undefined);
    return true;
  }
  const items = value.items ?? [];
  if (!Array.isArray(items)) {
    reader.fail(['items'], 'expected an array');
    return false;
  }
  // The API's own lists (`kubectl get --raw`) leave the kind out of their items; kubectl fills it.
  const itemKind = value.kind === 'List' ? undefined : value.kind.slice(0, -'List'.length);
  for (const [i, item] of items.entries()) readObject(input, reader, sink, item, ['items', i], itemKind);
  return true;
}

function readObject(input: InputFile, reader: FieldReader, sink: ObjectSink, value: unknown, path: FieldPath, listKind: string | undefined): void {
  if (!isRecord(value)) {
    reader.fail(path, 'expected an object');
    return;
  }
  const kind = value.kind ?? listKind;
  if (typeof kind !== 'string') {
    reader.fail([...path, 'kind'], 'expected the kind of the object (Service, EndpointSlice, Node…)');
    return;
  }
  const span = input.spanOf(path);
  const at: Loc = span ? { file: span.file, line: span.line, column: span.column } : { file: input.file, line: 1, column: 1 };
  const errorsBefore = reader.errors.length;
  const fields = new ObjectFields(reader, value, undefined, path);
  // An object with an error is left out: half of a Service would give wrong expectations.
  const isGood = (read: ReadKind, id: string): boolean => reader.errors.length === errorsBefore && sink.isNew(read, id, at, span);
  switch (kind) {
    case 'Service': {
      const service = readService(fields, at);
      if (isGood(kind, `${service.namespace}/${service.name}`)) sink.services.push(service);
      return;
    }
    case 'EndpointSlice': {
      // A slice no Service owns is legal (another controller's), and kube-proxy skips it.
      if (!hasServiceName(value)) {
        const what = (count: number) => `EndpointSlice${count === 1 ? '' : 's'} without the ${SERVICE_NAME_LABEL} label`;
        sink.ignore('EndpointSlice without service', span, what, 'kube-proxy reads only the slices of a Service');
        return;
      }
      const slice = readEndpointSlice(fields, at);
      if (isGood(kind, `${slice.namespace}/${slice.name}`)) sink.endpointSlices.push(slice);
      return;
    }
    case 'Node': {
      const node = readNode(fields);
      if (isGood(kind, node.name)) sink.nodes.push(node);
      return;
    }
    default:
      sink.ignore(kind, span);
  }
}

function readService(o: ObjectFields, at: Loc): Service {
  const meta = readMetadata(o, true);
  const spec = o.object('spec');
  const status = o.object('status');
  const type = spec.oneOf('type', ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const, 'ClusterIP');
  // spec.clusterIPs holds spec.clusterIP first; a client may have written only the older field.
  // `None` is a headless Service and kube-proxy programs nothing for it (ShouldSkipService).
  const [ipsKey, clusterIPs] = spec.has('clusterIPs') ? ['clusterIPs', spec.strings('clusterIPs')] : ['clusterIP', [spec.string('clusterIP') ?? '']];
  const assigned = clusterIPs.flatMap((ip, i) => (ip === 'None' || ip === '' ? [] : [spec.address(ip, ipsKey === 'clusterIPs' ? [ipsKey, i] : [ipsKey])]));
  const sessionAffinity = spec.oneOf('sessionAffinity', ['None', 'ClientIP'] as const, 'None');
  const timeout = spec.object('sessionAffinityConfig').object('clientIP').integer('timeoutSeconds', 1, MAX_AFFINITY_SECONDS);
  const trafficDistribution = spec.string('trafficDistribution');
  return {
    namespace: meta.namespace,
    name: meta.name,
    type,
    clusterIPs: assigned,
    externalIPs: spec.strings('externalIPs').map((ip, i) => spec.address(ip, ['externalIPs', i])),
    loadBalancerIPs: readIngressIPs(status.object('loadBalancer')),
    loadBalancerSourceRanges: spec.strings('loadBalancerSourceRanges').map((range, i) => {
      // The API allows spaces around a range and kube-proxy trims them (serviceport.go).
      const trimmed = range.trim();
      if (!parseCidr(trimmed)) spec.fail(['loadBalancerSourceRanges', i], `'${range}' is not a CIDR`);
      return trimmed;
    }),
    ports: spec.objects('ports').map(readServicePort),
    externalTrafficPolicy: spec.oneOf('externalTrafficPolicy', TRAFFIC_POLICIES, 'Cluster'),
    internalTrafficPolicy: spec.oneOf('internalTrafficPolicy', TRAFFIC_POLICIES, 'Cluster'),
    sessionAffinity,
    ...(sessionAffinity === 'ClientIP' && { sessionAffinityTimeout: timeout ?? DEFAULT_AFFINITY_SECONDS }),
    annotations: o.object('metadata').stringMap('annotations'),
    ...(trafficDistribution !== undefined && { trafficDistribution }),
    at,
  };
}

const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const satisfies readonly TrafficPolicy[];

function readServicePort(port: ObjectFields): ServicePortSpec {
  const nodePort = port.integer('nodePort', 0, 65535);
  return {
    name: port.string('name') ?? '',
    protocol: readProtocol(port),
    port: port.requiredInteger('port', 1, 65535),
    // 0 is an unallocated nodePort (a LoadBalancer with allocateLoadBalancerNodePorts: false).
    ...(nodePort !== undefined && nodePort !== 0 && { nodePort }),
  };
}

/** status.loadBalancer.ingress[].ip; an entry with `ipMode: Proxy` is left to the load balancer,
 * which forwards to the nodes itself, and kube-proxy writes no rule for it (proxyutil.IsVIPMode). */
function readIngressIPs(loadBalancer: ObjectFields): string[] {
  return loadBalancer.objects('ingress').flatMap((ingress) => {
    const ip = ingress.string('ip');
    if (ip === undefined || ip === '' || ingress.string('ipMode') === 'Proxy') return [];
    return [ingress.address(ip, ['ip'])];
  });
}

function hasServiceName(value: Readonly<Record<string, unknown>>): boolean {
  const metadata = value.metadata;
  const labels = isRecord(metadata) ? metadata.labels : undefined;
  const name = isRecord(labels) ? labels[SERVICE_NAME_LABEL] : undefined;
  return typeof name === 'string' && name !== '';
}

function readEndpointSlice(o: ObjectFields, at: Loc): EndpointSlice {
  const meta = readMetadata(o, true);
  const serviceName = meta.labels[SERVICE_NAME_LABEL];
  const addressType = o.oneOf('addressType', ['IPv4', 'IPv6', 'FQDN'] as const, undefined);
  const family: AddressFamily | undefined = addressType === 'IPv4' ? 'ip' : addressType === 'IPv6' ? 'ip6' : undefined;
  return {
    namespace: meta.namespace,
    name: meta.name,
    serviceName: serviceName ?? '',
    addressType: addressType ?? 'IPv4',
    ports: o.objects('ports').map((port) => ({
      // discovery/v1 defaults an absent name to "" and protocol to TCP (SetDefaults_EndpointPort).
      name: port.string('name') ?? '',
      protocol: readProtocol(port),
      port: port.requiredInteger('port', 1, 65535),
    })),
    endpoints: o.objects('endpoints').map((endpoint) => readSliceEndpoint(endpoint, family)),
    at,
  };
}

function readSliceEndpoint(endpoint: ObjectFields, family: AddressFamily | undefined): SliceEndpoint {
  const addresses = endpoint.strings('addresses');
  if (addresses.length === 0) endpoint.fail(['addresses'], 'expected at least one address');
  const conditions = endpoint.object('conditions');
  const ready = conditions.boolean('ready') ?? true;
  const hints = endpoint.object('hints');
  const hintZones = hints.objects('forZones').map((zone) => zone.requiredString('name'));
  const hintNodes = hints.objects('forNodes').map((node) => node.requiredString('name'));
  const nodeName = endpoint.string('nodeName');
  const zone = endpoint.string('zone');
  return {
    addresses: addresses.map((address, i) => (family ? endpoint.address(address, ['addresses', i], family) : address)),
    ready,
    // kube-proxy's reading of absent conditions (pkg/proxy/endpointslicecache.go); see SliceEndpoint.
    serving: conditions.boolean('serving') ?? true,
    terminating: conditions.boolean('terminating') ?? false,
    ...(nodeName !== undefined && { nodeName }),
    ...(zone !== undefined && { zone }),
    ...(hintZones.length > 0 && { hintZones }),
    ...(hintNodes.length > 0 && { hintNodes }),
  };
}

function readNode(o: ObjectFields): ClusterNode {
  const meta = readMetadata(o, false);
  const spec = o.object('spec');
  const podCIDRs = spec.has('podCIDRs') ? spec.strings('podCIDRs') : [spec.string('podCIDR') ?? ''].filter((cidr) => cidr !== '');
  return {
    name: meta.name,
    addresses: o.object('status').objects('addresses').map((a) => {
      const address = a.requiredString('address');
      // Hostname and InternalDNS entries are names; only IPs are made canonical.
      const ip = parseAddress(address);
      return { type: a.requiredString('type'), address: ip ? formatAddress(ip) : address };
    }),
    podCIDRs: podCIDRs.map((cidr, i) => {
      if (!parseCidr(cidr)) spec.fail(spec.has('podCIDRs') ? ['podCIDRs', i] : ['podCIDR'], `'${cidr}' is not a CIDR`);
      return cidr;
    }),
    labels: meta.labels,
  };
}

function readMetadata(o: ObjectFields, namespaced: boolean): { name: string; namespace: string; labels: Record<string, string> } {
  const metadata = o.object('metadata');
  return {
    name: metadata.requiredString('name'),
    // Captured objects always carry their namespace; a hand-written one without it is in
    // `default`, where kubectl would create it.
    namespace: namespaced ? (metadata.string('namespace') ?? 'default') : '',
    labels: metadata.stringMap('labels'),
  };
}

function readProtocol(port: ObjectFields): ServiceProtocol {
  const text = port.string('protocol') ?? 'TCP';
  const protocol = PROTOCOLS[text];
  if (!protocol) port.fail(['protocol'], `unknown protocol '${text}' (expected TCP, UDP or SCTP)`);
  return protocol ?? 'tcp';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The fields of one object of a Kubernetes API object, read with the API's leniency: an absent
 * or null field is absent (Go's nil), other objects' fields are not checked. A wrong value is an
 * error at its path; the accessor then returns what an absent field would give, so reading goes on
 * and every problem of the object is reported at once. */
class ObjectFields {
  /** The object is at `segments` below `parent`: its path is made only for an error, as reading
   * a large cluster visits a million fields and fails on none. */
  constructor(
    private readonly reader: FieldReader,
    private readonly value: Readonly<Record<string, unknown>>,
    private readonly parent: ObjectFields | undefined,
    private readonly segments: FieldPath,
  ) {}

  /** An error at `rest` below this object. */
  fail(rest: FieldPath, message: string): undefined {
    return this.reader.fail([...this.path(), ...rest], message);
  }

  has(key: string): boolean {
    return this.value[key] !== undefined && this.value[key] !== null;
  }

  /** A nested object; an empty one when absent (kube reads absent structs as zero values). */
  object(key: string): ObjectFields {
    const v = this.value[key];
    if (v !== undefined && v !== null && !isRecord(v)) this.fail([key], 'expected an object');
    return new ObjectFields(this.reader, isRecord(v) ? v : {}, this, [key]);
  }

  /** An array of objects; empty when absent. */
  objects(key: string): ObjectFields[] {
    const out: ObjectFields[] = [];
    for (const [i, item] of this.array(key).entries()) {
      if (isRecord(item)) out.push(new ObjectFields(this.reader, item, this, [key, i]));
      else this.fail([key, i], 'expected an object');
    }
    return out;
  }

  /** An array of strings; empty when absent. */
  strings(key: string): string[] {
    const out: string[] = [];
    for (const [i, item] of this.array(key).entries()) {
      if (typeof item === 'string') out.push(item);
      else this.fail([key, i], 'expected a string');
    }
    return out;
  }

  string(key: string): string | undefined {
    const v = this.value[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') return this.fail([key], 'expected a string');
    return v;
  }

  requiredString(key: string): string {
    const v = this.string(key);
    if (v === undefined && !this.has(key)) this.fail([key], 'missing');
    return v ?? '';
  }

  boolean(key: string): boolean | undefined {
    const v = this.value[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') return this.fail([key], 'expected true or false');
    return v;
  }

  integer(key: string, min: number, max: number): number | undefined {
    const v = this.value[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      return this.fail([key], `expected an integer from ${min} to ${max}`);
    }
    return v;
  }

  requiredInteger(key: string, min: number, max: number): number {
    const v = this.integer(key, min, max);
    if (v === undefined && !this.has(key)) this.fail([key], `missing (an integer from ${min} to ${max})`);
    return v ?? 0;
  }

  /** One of `values`; `fallback` when absent (the API's default), missing when it has none. */
  oneOf<T extends string>(key: string, values: readonly T[], fallback: T): T;
  oneOf<T extends string>(key: string, values: readonly T[], fallback: T | undefined): T | undefined;
  oneOf<T extends string>(key: string, values: readonly T[], fallback: T | undefined): T | undefined {
    const v = this.string(key);
    if (v === undefined || v === '') {
      if (fallback === undefined && !this.has(key)) this.fail([key], `missing (one of ${values.join(', ')})`);
      return fallback;
    }
    if (!(values as readonly string[]).includes(v)) {
      this.fail([key], `unknown value '${v}' (expected one of ${values.join(', ')})`);
      return fallback;
    }
    return v as T;
  }

  /** A map of strings (labels, annotations); empty when absent. */
  stringMap(key: string): Record<string, string> {
    const map = this.object(key);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(map.value)) {
      if (typeof v === 'string') out[k] = v;
      else map.fail([k], 'expected a string');
    }
    return out;
  }

  /** An IP address (the field at `rest`) in canonical text, as kube-proxy reads it
   * (ParseIPSloppy(…).String()); of `family` when given (an EndpointSlice's addressType). */
  address(text: string, rest: FieldPath, family?: AddressFamily): string {
    const address = parseAddress(text);
    if (!address) this.fail(rest, `'${text}' is not an IP address`);
    else if (family && address.family !== family) this.fail(rest, `'${text}' is not an ${family === 'ip' ? 'IPv4' : 'IPv6'} address (the slice's addressType)`);
    return address ? formatAddress(address) : text;
  }

  private path(): FieldPath {
    return this.parent ? [...this.parent.path(), ...this.segments] : this.segments;
  }

  private array(key: string): readonly unknown[] {
    const v = this.value[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      this.fail([key], 'expected an array');
      return [];
    }
    return v;
  }
}
