// A service record as the write path holds it (src/hot/domain/service.ts ServiceRecord), for
// the tests of the pure rules that read one: a plain production service, changed by `over`.
import type { ServiceRecord } from '../../src/hot/domain/service.js';

export function serviceRecord(over: Partial<ServiceRecord> = {}): ServiceRecord {
  return {
    id: 'svc1',
    ns: 'production',
    seq: 7,
    endpoint: 'https://a.example/',
    capabilities: ['print', 'scan'],
    properties: {},
    iot: null,
    deprecated: false,
    deprecatedAt: null,
    locked: false,
    sunsetDate: null,
    replacementSeqs: [],
    ...over,
  };
}
