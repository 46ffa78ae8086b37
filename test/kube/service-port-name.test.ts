import { describe, expect, it } from 'vitest';
import type { Service, ServicePortSpec } from '../../src/kube/cluster.js';
import { servicePortName } from '../../src/kube/service-port-name.js';

const SERVICE = { namespace: 'shop', name: 'web' } as Service;

describe('servicePortName (kube-proxy ServicePortName.String(), the name in its rule comments)', () => {
  it.each<[string, ServicePortSpec, string]>([
    ['a named port: ns/svc:port', { name: 'http', protocol: 'tcp', port: 80 }, 'shop/web:http'],
    ['the unnamed port of a single-port Service: ns/svc', { name: '', protocol: 'tcp', port: 80 }, 'shop/web'],
    ['the protocol is not part of the name', { name: 'dns', protocol: 'udp', port: 53 }, 'shop/web:dns'],
  ])('%s', (_name, port, expected) => {
    expect(servicePortName(SERVICE, port)).toBe(expected);
  });
});
