// A process that joins a leader election: `node leaderChild.js <dir> <name> [--wait-go]`.
// With --wait-go it prints {ev:'ready'} once loaded and joins only on {cmd:'go'}, so that a test
// can start several processes at the same instant.
//
// stdout, one JSON object per line (`t` is process.hrtime in ms: one clock for every process
// on the machine, so the parent can order events across children):
//   {ev:'role', role, t}        on every role change (and 'stopped' at the start)
//   {ev:'sample', role, acting, t}  every 20 ms; `acting`: leader and its fence lets it act
//                               (src/leader/lease.ts), as the engine asks before a set
//   {ev:'following', leaderPid, t}  welcomed by a leader, as a follower
//   {ev:'state', snapshot, t}   a state received as a follower
//   {ev:'result', id, ok, value?, error?}
//   {ev:'log', message}
// stdin, one JSON object per line:
//   {cmd:'stop'}                          stop the election, then exit 0
//   {cmd:'broadcast', snapshot}           as leader
//   {cmd:'command', id, name, args}       as follower
//   {cmd:'block', ms}                     blocks the event loop for `ms` (a busy extension host)
// As leader it answers every command with {pid, name, args}.
import * as readline from 'node:readline';
import { LeaderElection } from '../../src/leader/election';

const [dir, name, flag] = process.argv.slice(2);
const waitGo = flag === '--wait-go';
if (!dir || !name) {
  process.stderr.write('usage: leaderChild <dir> <name>\n');
  process.exit(2);
}

const now = () => Number(process.hrtime.bigint()) / 1e6;
const out = (obj: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(obj)}\n`);

const election = new LeaderElection({
  dir,
  name,
  checkMs: 250,
  log: (message) => out({ ev: 'log', message }),
});
election.onRoleChange((role) => out({ ev: 'role', role, t: now() }));
election.onLeader((server) => {
  server.onCommand((cmd, args) => ({ pid: process.pid, name: cmd, args }));
});
election.onFollower((conn) => {
  conn.welcomed.then(
    (leaderPid) => out({ ev: 'following', leaderPid, t: now() }),
    () => undefined,
  );
  conn.onState((snapshot) => out({ ev: 'state', snapshot, t: now() }));
});

const sampler = setInterval(() => {
  const acting = election.role === 'leader' && election.fence() === null;
  out({ ev: 'sample', role: election.role, acting, t: now() });
}, 20);

const rl = readline.createInterface({ input: process.stdin });
// The parent went away: leave cleanly rather than linger.
rl.on('close', () => {
  clearInterval(sampler);
  void election.stop().finally(() => process.exit(0));
});
rl.on('line', (line) => {
  let msg: { cmd?: string; snapshot?: unknown; id?: number; name?: string; args?: unknown[]; ms?: number };
  try {
    msg = JSON.parse(line) as typeof msg;
  } catch {
    return;
  }
  if (msg.cmd === 'go') {
    join();
  } else if (msg.cmd === 'stop') {
    clearInterval(sampler);
    void election.stop().then(() => {
      out({ ev: 'role', role: election.role, t: now() });
      process.exit(0);
    });
  } else if (msg.cmd === 'block') {
    out({ ev: 'blocking', t: now() });
    const until = now() + (msg.ms ?? 0);
    while (now() < until) {
      // a synchronous stretch: timers, sockets and the lease all wait
    }
    out({ ev: 'unblocked', t: now() });
  } else if (msg.cmd === 'broadcast') {
    election.server?.broadcast(msg.snapshot);
  } else if (msg.cmd === 'command') {
    const conn = election.connection;
    if (!conn) {
      out({ ev: 'result', id: msg.id, ok: false, error: 'not a follower' });
      return;
    }
    conn.command(msg.name ?? '', msg.args ?? [], 3000).then(
      (value) => out({ ev: 'result', id: msg.id, ok: true, value }),
      (e: Error) => out({ ev: 'result', id: msg.id, ok: false, error: e.message }),
    );
  }
});

function join(): void {
  election.start().catch((e: Error) => {
    out({ ev: 'fatal', message: e.message });
    process.exit(1);
  });
}

out({ ev: 'role', role: election.role, t: now() });
if (waitGo) out({ ev: 'ready', t: now() });
else join();
