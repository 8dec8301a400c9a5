// The floor of the heartbeat rows (bench/liveness.ts, bench/heartbeat-parts.ts): a bare uWS
// handler that answers 204 once Redis has answered one PING for all the requests of its
// event-loop turn (on the given client, the server's own). No token, no script, no route
// layer: the most any heartbeat confirmed by Redis before its 204 could do on this machine.
// The PING is written at once (sendCommand), not through ioredis's auto-pipeline, which
// holds a command for one more event-loop turn: the heartbeat's script call is sent the same
// way (redis/client.ts, autoPipeliningIgnoredCommands), and a floor must not be slower.
import type uWS from 'uWebSockets.js';
import { Command } from 'ioredis';
import type { RedisClient } from '../src/hot/redis/client.js';

export function floorHandler(redis: RedisClient): (res: uWS.HttpResponse) => void {
  let waiting: (() => void)[] = [];
  const answerAll = () => {
    const w = waiting;
    waiting = [];
    void (redis.sendCommand(new Command('ping')) as Promise<unknown>).then(() => {
      for (const f of w) f();
    });
  };
  return (res) => {
    let gone = false;
    res.onAborted(() => (gone = true));
    waiting.push(() => {
      if (!gone) res.cork(() => void res.writeStatus('204 No Content').endWithoutBody());
    });
    if (waiting.length === 1) setImmediate(answerAll);
  };
}
