// An OTLP/HTTP receiver for the telemetry tests: a node:http server on 127.0.0.1 that records
// every request (path, headers, JSON body) and answers with the status the test sets (200 by
// default, as a collector does; 500 for one that refuses). Loopback only.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A log record as the JSON encoding has it, with its resource's service.name. */
export interface ReceivedLog {
  service: string | undefined;
  severityNumber: number;
  severityText: string;
  body: string | undefined;
  attributes: Record<string, string | number | boolean | undefined>;
}

const scalar = (v: any): string | number | boolean | undefined =>
  v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : (v?.doubleValue ?? v?.boolValue));

const attrs = (list: any[] | undefined) => Object.fromEntries((list ?? []).map((a: any) => [a.key, scalar(a.value)]));

export class OtlpReceiver {
  readonly requests: Received[] = [];
  /** The status every request is answered with. */
  status = 200;
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = http.createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // protobuf or garbage: kept as text
        }
        receiver.requests.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(receiver.status, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Every log record received, flattened, with its resource's service.name. */
  logs(): ReceivedLog[] {
    return this.requests
      .filter((r) => r.path === '/v1/logs' && typeof r.body === 'object')
      .flatMap((r) =>
        (r.body.resourceLogs ?? []).flatMap((rl: any) => {
          const service = attrs(rl.resource?.attributes)['service.name'] as string | undefined;
          return (rl.scopeLogs ?? []).flatMap((sl: any) =>
            (sl.logRecords ?? []).map((lr: any) => ({
              service,
              severityNumber: lr.severityNumber,
              severityText: lr.severityText,
              body: lr.body?.stringValue,
              attributes: attrs(lr.attributes),
            })),
          );
        }),
      );
  }

  /**
   * The latest value of the metric `name` from `service` (a cumulative sum's newest data point, by
   * its time: a request the exporter timed out on, and sent again, may still arrive after the
   * newer one), or undefined.
   */
  latest(name: string, service = 'codex-goal-recovery'): number | undefined {
    let value: number | undefined;
    let newest = -1n;
    for (const r of this.requests.filter((x) => x.path === '/v1/metrics' && typeof x.body === 'object'))
      for (const rm of r.body.resourceMetrics ?? []) {
        if (attrs(rm.resource?.attributes)['service.name'] !== service) continue;
        for (const sm of rm.scopeMetrics ?? [])
          for (const m of sm.metrics ?? [])
            if (m.name === name)
              for (const p of m.sum?.dataPoints ?? []) {
                const at = BigInt(p.timeUnixNano ?? 0);
                if (at < newest) continue;
                newest = at;
                value = p.asInt !== undefined ? Number(p.asInt) : (p.asDouble as number);
              }
      }
    return value;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A loopback port where nothing listens (one a server had, then gave back): a collector down. */
export async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
