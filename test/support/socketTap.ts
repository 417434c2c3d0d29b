// A tap on the real daemon's control socket (WebSocket over a Unix socket): a socket of its own,
// in a private directory, that forwards every byte both ways, and reads the client's WebSocket
// frames (unmasked) so a test can act at the moment a given request leaves the client — before
// the daemon has it. Used to kill a runner as its `thread/goal/set` leaves it (the write-ahead
// intent must be on disk by then), and to decide what becomes of that set: forwarded to the
// daemon (it takes effect, its reply finds no one) or dropped (it never arrives).
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export interface HeldFrame {
  /** The frame's text (a JSON-RPC message). */
  text: string;
  /** Sends it on to the daemon; resolves with the daemon's reply to it (null: none in 10 s, or the link closed). */
  forward(): Promise<string | null>;
  /** Never sends it. */
  drop(): void;
}

/**
 * Called for each text frame a client sends; return true to hold it (nothing behind it moves until it is forwarded or
 * dropped).
 */
export type FrameHook = (text: string, held: HeldFrame) => boolean;

export class SocketTap {
  readonly dir: string;
  readonly socketPath: string;
  private readonly server: net.Server;
  private readonly links = new Set<net.Socket>();
  hook: FrameHook | null = null;

  private constructor(readonly upstream: string) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-tap-'));
    fs.chmodSync(this.dir, 0o700);
    this.socketPath = path.join(this.dir, 'tap.sock');
    this.server = net.createServer((client) => this.link(client));
  }

  static async start(upstream: string): Promise<SocketTap> {
    const tap = new SocketTap(upstream);
    await new Promise<void>((resolve, reject) => {
      tap.server.once('error', reject);
      tap.server.listen(tap.socketPath, () => resolve());
    });
    fs.chmodSync(tap.socketPath, 0o600);
    return tap;
  }

  private link(client: net.Socket): void {
    const daemon = net.connect(this.upstream);
    this.links.add(client);
    this.links.add(daemon);
    let held = false;
    let clientGone = false;
    const end = () => {
      client.destroy();
      daemon.destroy();
      this.links.delete(client);
      this.links.delete(daemon);
    };
    // A client gone while a frame of it is held: the daemon's side stays open until the frame is
    // dropped, or forwarded and answered.
    const clientEnded = () => {
      clientGone = true;
      if (!held) end();
    };
    client.on('error', clientEnded).on('close', clientEnded);
    // Daemon to client: passed on as it is, and read frame by frame (unmasked) for the replies held
    // frames wait for.
    const awaiting = new Map<string, (reply: string | null) => void>();
    daemon.on('error', end).on('close', () => {
      for (const done of awaiting.values()) done(null);
      awaiting.clear();
      end();
    });
    let fromDaemon = Buffer.alloc(0);
    let daemonHandshaken = false;
    daemon.on('data', (b) => {
      if (!client.destroyed) client.write(b);
      fromDaemon = Buffer.concat([fromDaemon, b]);
      for (;;) {
        if (!daemonHandshaken) {
          const at = fromDaemon.indexOf('\r\n\r\n');
          if (at < 0) return;
          fromDaemon = fromDaemon.subarray(at + 4);
          daemonHandshaken = true;
          continue;
        }
        const frame = parseFrame(fromDaemon);
        if (!frame) return;
        fromDaemon = fromDaemon.subarray(frame.length);
        if (frame.opcode !== 1 || awaiting.size === 0) continue;
        const id = replyId(frame.text);
        const done = id === undefined ? undefined : awaiting.get(id);
        if (done) {
          awaiting.delete(id!);
          done(frame.text);
        }
      }
    });
    // Client to daemon: the HTTP upgrade request as it is, then frame by frame.
    let buffer = Buffer.alloc(0);
    let handshaken = false;
    const pump = () => {
      while (!held) {
        if (!handshaken) {
          const at = buffer.indexOf('\r\n\r\n');
          if (at < 0) return;
          daemon.write(buffer.subarray(0, at + 4));
          buffer = buffer.subarray(at + 4);
          handshaken = true;
          continue;
        }
        const frame = parseFrame(buffer);
        if (!frame) return;
        const raw = buffer.subarray(0, frame.length);
        buffer = buffer.subarray(frame.length);
        if (frame.opcode === 1 && this.hook) {
          let settled = false;
          const release = (send: boolean): Promise<string | null> => {
            if (settled) return Promise.resolve(null);
            settled = true;
            const id = requestId(frame.text);
            const reply =
              send && id !== undefined && !daemon.destroyed
                ? new Promise<string | null>((resolve) => {
                    const timer = setTimeout(() => {
                      awaiting.delete(id);
                      resolve(null);
                    }, 10_000);
                    awaiting.set(id, (text) => {
                      clearTimeout(timer);
                      resolve(text);
                    });
                  })
                : Promise.resolve(null);
            if (send && !daemon.destroyed) daemon.write(raw);
            held = false;
            if (clientGone) {
              // A forwarded set takes effect and its reply finds no one: the daemon's side stays open
              // until the daemon answers that request (or 10 s); a notification that comes first does
              // not close it. Closed at once, the daemon may never process it (measured with 0.169.0:
              // a request followed by EOF is sometimes dropped): a lost set, which is what drop() models.
              if (!send) daemon.end();
              else void reply.then(() => daemon.end());
              return reply;
            }
            pump();
            return reply;
          };
          held = this.hook(frame.text, {
            text: frame.text,
            forward: () => release(true),
            drop: () => void release(false),
          });
          if (held) return;
          settled = true;
        }
        daemon.write(raw);
      }
    };
    client.on('data', (b) => {
      buffer = Buffer.concat([buffer, b]);
      pump();
    });
  }

  async close(): Promise<void> {
    for (const s of this.links) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One complete WebSocket frame at the start of `b` (a client's: masked), or null if more bytes are needed. */
function parseFrame(b: Buffer): { length: number; opcode: number; text: string } | null {
  if (b.length < 2) return null;
  const opcode = b[0] & 0x0f;
  const masked = (b[1] & 0x80) !== 0;
  let len = b[1] & 0x7f;
  let at = 2;
  if (len === 126) {
    if (b.length < 4) return null;
    len = b.readUInt16BE(2);
    at = 4;
  } else if (len === 127) {
    if (b.length < 10) return null;
    len = Number(b.readBigUInt64BE(2));
    at = 10;
  }
  const maskAt = at;
  if (masked) at += 4;
  if (b.length < at + len) return null;
  const payload = Buffer.from(b.subarray(at, at + len));
  if (masked) for (let i = 0; i < payload.length; i++) payload[i] = payload[i] ^ b[maskAt + (i % 4)];
  return { length: at + len, opcode, text: opcode === 1 ? payload.toString('utf8') : '' };
}

/** The id of a JSON-RPC request, as a key (undefined: a notification, or not JSON). */
function requestId(text: string): string | undefined {
  try {
    const m = JSON.parse(text) as { id?: unknown; method?: unknown };
    return m.id !== undefined && m.id !== null && typeof m.method === 'string' ? JSON.stringify(m.id) : undefined;
  } catch {
    return undefined;
  }
}

/** The id of a JSON-RPC reply, as a key (undefined: a request or notification from the daemon, or not JSON). */
function replyId(text: string): string | undefined {
  try {
    const m = JSON.parse(text) as { id?: unknown; method?: unknown };
    return m.id !== undefined && m.id !== null && m.method === undefined ? JSON.stringify(m.id) : undefined;
  } catch {
    return undefined;
  }
}
