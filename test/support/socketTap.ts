// A tap on the real daemon's control socket (WebSocket over a Unix socket): a socket of its own,
// in a private directory, that forwards every byte both ways, and reads the WebSocket frames of
// both (the client's unmasked) so a test can act at the moment a given request leaves the client —
// before the daemon has it — and know when the daemon has answered it. Used to kill a runner as its
// `thread/goal/set` leaves it (the write-ahead intent must be on disk by then), and to decide what
// becomes of that set: forwarded to the daemon (it takes effect, its reply finds no one) or dropped
// (it never arrives).
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
    const fromDaemon = new FrameReader();
    daemon.on('data', (b) => {
      if (!client.destroyed) client.write(b);
      fromDaemon.push(b);
      for (let frame = fromDaemon.next(); frame; frame = fromDaemon.next()) {
        const id = frame.opcode === 1 && awaiting.size > 0 ? rpcId(frame.text, 'reply') : undefined;
        const done = id === undefined ? undefined : awaiting.get(id);
        if (done) {
          awaiting.delete(id!);
          done(frame.text);
        }
      }
    });
    // Client to daemon: the HTTP upgrade request as it is, then frame by frame.
    const fromClient = new FrameReader();
    const pump = () => {
      while (!held) {
        const frame = fromClient.next();
        if (!frame) return;
        const { raw } = frame;
        if (frame.opcode === 1 && this.hook) {
          let settled = false;
          const release = (send: boolean): Promise<string | null> => {
            if (settled) return Promise.resolve(null);
            settled = true;
            const id = rpcId(frame.text, 'request');
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
      fromClient.push(b);
      pump();
    });
  }

  async close(): Promise<void> {
    for (const s of this.links) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One direction of a WebSocket link, read as it arrives: its HTTP head, then frame by frame. */
class FrameReader {
  private buffer = Buffer.alloc(0);
  private headRead = false;

  push(b: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, b]);
  }

  /**
   * The next complete piece and its bytes as they came: the HTTP head first (opcode -1), then each
   * frame (its text, when a text frame); null until more bytes arrive.
   */
  next(): { raw: Buffer; opcode: number; text: string } | null {
    if (!this.headRead) {
      const at = this.buffer.indexOf('\r\n\r\n');
      if (at < 0) return null;
      this.headRead = true;
      return { raw: this.take(at + 4), opcode: -1, text: '' };
    }
    const frame = parseFrame(this.buffer);
    return frame && { raw: this.take(frame.length), opcode: frame.opcode, text: frame.text };
  }

  private take(length: number): Buffer {
    const raw = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    return raw;
  }
}

/** One complete WebSocket frame at the start of `b` (masked, as a client sends it, or not); null: more bytes needed. */
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

/**
 * The id of a JSON-RPC request (it names a method) or of a reply (it names none), as a key;
 * undefined when the message is not of that kind (a notification, say) or not JSON.
 */
function rpcId(text: string, kind: 'request' | 'reply'): string | undefined {
  try {
    const m = JSON.parse(text) as { id?: unknown; method?: unknown };
    if (m.id === undefined || m.id === null) return undefined;
    return (kind === 'request' ? typeof m.method === 'string' : m.method === undefined)
      ? JSON.stringify(m.id)
      : undefined;
  } catch {
    return undefined;
  }
}
