// The environment every test server starts from: test mode, the admin key, ephemeral ports, one
// uWS thread, quiet logs (TEST_LOG_LEVEL to hear them).

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';

export function baseEnv(): Record<string, string | undefined> {
  return {
    ...process.env,
    NODE_ENV: 'test',
    ADMIN_API_KEY: ADMIN_KEY,
    PORT: '0',
    METRICS_PORT: '0', // each test server's /metrics listener on an ephemeral port
    DNS_PORT: 'off', // tests of the DNS server ask for one (DNS_PORT: '0'); 8600 would clash
    WORKERS: '1',
    COOKIE_SECURE: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PROXY_SOCKET_DIR: '', // a test that wants proxy sockets gives a directory of its own
  };
}
