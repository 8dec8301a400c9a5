// The DNS row's ceiling (bench/discovery.ts): a bare node:dgram server that answers every
// query with the same bytes the registry's DNS server gave for it, the query's id copied in.
// What any DNS server on node:dgram could do on this core.
//
//   ANSWER_HEX=<answer bytes> node dist/bench/dns-ceiling.js <port>
import { createSocket } from 'node:dgram';

const answer = Buffer.from(process.env.ANSWER_HEX ?? '', 'hex');
const port = Number(process.argv[2]);
const sock = createSocket('udp4');
sock.on('message', (msg, from) => {
  if (msg.length < 12) return;
  const out = Buffer.from(answer);
  out[0] = msg[0]!;
  out[1] = msg[1]!;
  sock.send(out, from.port, from.address);
});
sock.bind(port, '127.0.0.1', () => console.log(`dns ceiling on 127.0.0.1:${port}`));
