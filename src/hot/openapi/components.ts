// The components of the OpenAPI document (openapi.ts): its security schemes (the sandbox
// key, the admin key and session, a service's heartbeat token) and its named schemas, taken
// from the schemas ajv compiles (domain/schemas.ts, domain/response-schemas.ts) so that the
// document and the validation cannot drift apart; the tier schemas name the configured tiers.
import * as S from '../domain/schemas.js';
import * as R from '../domain/response-schemas.js';
import { consulTokenScheme, discoverySchemas } from './discovery.js';
import { ref, type Obj } from './parts.js';

const strip = ({ $id: _id, ...rest }: Obj) => rest;

/** what every credential's scheme says of bodies (contract "Input limits") */
const BEFORE_BODY = ' Checked before a request body is read: a missing or wrong one is 401 whatever the body, and when a body was sent the answer closes the connection without reading it.';

/** `components` for the configured tiers; `tierIn` is the schema of a tier a request names. */
export function openApiComponents(tiers: string[], tierIn: Obj): Obj {
  const tierOut = { type: 'string', description: `the sandbox's tier (configured: ${tiers.join(', ')})` };
  const sandboxExtra = (extra: Obj, required: string[]) => ({ type: 'object', allOf: [ref('SandboxSummary')], required, properties: extra });
  return {
    securitySchemes: {
      sandboxKey: {
        type: 'http',
        scheme: 'bearer',
        description:
          'sandbox API key `<prefix>_sb_<random><checksum>`: prefix `[a-z0-9]{1,16}` from the sandbox name, 32 base62 characters from a CSPRNG (~190 bits), then 6 base62 characters (alphabet 0-9A-Za-z, most significant first, zero-padded) of the CRC32 (IEEE, as zlib) of everything before them. ' +
          'Secret scanners can match it with `\\b[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}\\b`. A key with a wrong checksum is refused without a look-up. Keys issued before the checksum (exactly 32 characters after `_sb_`) keep working.' + BEFORE_BODY,
        'x-key-pattern': '^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}$',
      },
      adminKey: { type: 'http', scheme: 'bearer', description: 'ADMIN_API_KEY; wrong keys count against LOGIN_FAILURES_PER_MINUTE per client address (429 beyond).' + BEFORE_BODY },
      adminSession: { type: 'apiKey', in: 'cookie', name: 'registry_admin', description: 'from POST /admin/session; calls other than GET also need X-CSRF-Token.' + BEFORE_BODY },
      heartbeatToken: {
        type: 'http',
        scheme: 'bearer',
        description:
          "a service's heartbeat token `<prefix>_hb_<random><checksum>` (the sandbox key's rules; prefix `prod` in production), from the 201 of a registration with a `ttl` or from POST …/heartbeat-token. Only its hash is stored." + BEFORE_BODY,
        'x-key-pattern': '^[a-z0-9]{1,16}_hb_[0-9A-Za-z]{38}$',
      },
      consulToken: consulTokenScheme,
    },
    schemas: {
      Service: S.service,
      Heartbeat: strip(S.heartbeat),
      HeartbeatToken: { type: 'object', additionalProperties: false, required: ['heartbeatToken'], properties: { heartbeatToken: { type: 'string', pattern: '^[a-z0-9]{1,16}_hb_[0-9A-Za-z]{38}$' } } },
      DeviceBinding: S.deviceBinding,
      Error: S.error,
      // the shipped reverse proxy's own refusals (deploy/nginx.conf), the contract's error body
      ProxyError: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: { code: { type: 'string', enum: ['HEADERS_TOO_LARGE'], description: "answered by the shipped reverse proxy, not by the server (not in the server's error registry)" }, message: { type: 'string' } },
          },
        },
      },
      Sandbox: S.sandbox,
      SandboxCreated: { type: 'object', allOf: [ref('Sandbox')], required: ['apiKey'], properties: { apiKey: { type: 'string', minLength: 1, description: 'shown once' } } },
      SandboxSummary: R.sandboxSummary(tierOut),
      Dashboard: sandboxExtra({ serviceQuota: R.serviceQuota, serviceCount: R.serviceCount, counters: R.dashboardCounters }, ['serviceQuota', 'serviceCount', 'counters']),
      Poll: R.poll,
      Stats: R.stats(tiers),
      SandboxPage: R.sandboxPage('#/components/schemas/SandboxSummary', tierIn),
      SandboxDetail: sandboxExtra(
        { serviceQuota: R.serviceQuota, serviceCount: R.serviceCount, health: R.healthCounts, counters: R.adminCounters, tierChanges: { type: 'array', items: R.tierChangeRecord } },
        ['serviceQuota', 'serviceCount', 'health', 'counters', 'tierChanges'],
      ),
      LocatedSandbox: R.locatedSandbox,
      CsrfToken: R.csrfToken,
      Readiness: R.readiness,
      Liveness: R.liveness,
      ServiceCreate: strip(S.serviceCreate),
      ServicePatch: strip(S.servicePatch),
      ReplacementAdd: strip(S.replacementAdd),
      SandboxCreate: strip(S.sandboxCreate),
      TierChange: { ...strip(S.tierChange), properties: { tier: tierIn } },
      AdminLogin: strip(S.adminLogin),
      ...discoverySchemas,
    },
  };
}
