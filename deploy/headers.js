// njs for deploy/nginx.conf (scripts/proxy.sh copies it into the prefix): is a request's
// header count past what the registry server reads? uWebSockets.js 20.30 reads at most 48
// header lines; a request with more is never answered (the connection is closed after its
// ~10 s idle timeout), which a client would see as nginx's 503. nginx refuses such a request
// with 431 instead. The server gets the client's headers less those nginx replaces or drops,
// plus at most ADDED of its own: the count below is of the client's headers that can reach
// the server, against 48 - ADDED. (test/proxy/headers.test.ts: the largest request let
// through is answered by the server, one header more is a 431.)

/** header lines uWebSockets.js 20.30 reads (its UWS_HTTP_MAX_HEADERS_COUNT, less its own two) */
var SERVER_READS = 48;

/**
 * headers nginx may add that the client need not have sent: Host (HTTP/1.0), X-Real-IP,
 * X-Forwarded-For, X-Forwarded-Proto (nginx.conf), Content-Length (a body, chunked or not),
 * and in the cached locations If-None-Match and If-Modified-Since (revalidation)
 */
var ADDED = 7;

/**
 * client headers nginx never passes on as they are: proxy_set_header in nginx.conf, and the
 * proxy module's own (Connection, Keep-Alive, TE, Expect, Upgrade, Content-Length and
 * Transfer-Encoding: nginx sends the body with a length of its own)
 */
var REPLACED = ['host', 'x-real-ip', 'x-forwarded-for', 'x-forwarded-proto', 'connection', 'keep-alive', 'te', 'expect', 'upgrade', 'content-length', 'transfer-encoding'];

/** "1" when the request has more headers than the server could read once nginx passed it on */
function tooMany(r) {
  var h = r.rawHeadersIn;
  var n = 0;
  for (var i = 0; i < h.length; i++) {
    if (REPLACED.indexOf(h[i][0].toLowerCase()) === -1) n++;
  }
  return n > SERVER_READS - ADDED ? '1' : '';
}

export default { tooMany };
