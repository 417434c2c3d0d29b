// The export's transport: one POST of an OTLP/HTTP JSON body (node:http or node:https by the URL's
// scheme), with the destination's headers. Resolves with the status once the answer has been read
// to its end; rejects when none came within the timeout, or the connection failed.
import * as http from 'node:http';
import * as https from 'node:https';
import type { Transport } from './exporter';

const TIMEOUT_MS = 10_000;

/** `headersFor`: the destination's headers for a URL (the logs' and the metrics' may differ). */
export function httpTransport(headersFor: (url: string) => Readonly<Record<string, string>>): Transport {
  return (url, body) =>
    new Promise<number>((resolve, reject) => {
      const target = new URL(url);
      const req = (target.protocol === 'https:' ? https : http).request(
        target,
        {
          method: 'POST',
          headers: {
            ...headersFor(url),
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
          },
          timeout: TIMEOUT_MS,
        },
        (res) => {
          res.resume(); // the answer's body is not needed: read it to its end so the socket is freed
          res.once('end', () => resolve(res.statusCode ?? 0));
          res.once('error', reject);
        },
      );
      req.once('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
      req.once('error', reject);
      req.end(body);
    });
}
