// The name kube-proxy gives a Service port in its rules' comments (`ns/svc:port cluster IP`,
// `"ns/svc:port has no endpoints"`) and its nft chain and map-element comments.

import type { Service, ServicePortSpec } from './cluster.js';

/** kube-proxy's ServicePortName.String() (pkg/proxy/types.go): `ns/svc:port`, or `ns/svc` for
 * the unnamed port of a single-port Service. The protocol is not part of it. */
export function servicePortName(service: Service, port: ServicePortSpec): string {
  const name = `${service.namespace}/${service.name}`;
  return port.name === '' ? name : `${name}:${port.name}`;
}
