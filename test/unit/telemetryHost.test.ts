// The window's export follows its settings live: started when one asks for it (the endpoint
// first, else Codex's exporter), left alone when a change does not touch it, restarted (the old
// one stopped) when it does, stopped when both are cleared; the decisions go to the running one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LogOutputChannel } from 'vscode';
import type { Settings } from '../../src/config/settings';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { TelemetryHost } from '../../src/host/telemetryHost';
import type { Decision } from '../../src/model/decision';
import type { TelemetryChoice } from '../../src/telemetry/index';

test('the export follows the settings, live', async () => {
  const events: string[] = [];
  const load = () =>
    ({
      startTelemetry: (choice: TelemetryChoice) => {
        const name = choice.kind === 'endpoint' ? choice.url : `codex ${choice.codexHome}`;
        events.push(`start ${name}`);
        return {
          level: 'notice',
          message: `telemetry: exporting to ${name}`,
          telemetry: {
            decided: (d: Decision) => void events.push(`${name} got ${d.type}`),
            stop: () => Promise.resolve(void events.push(`stop ${name}`)),
          },
        };
      },
    }) as unknown as typeof import('../../src/telemetry/index');
  const log = { info: (m: string) => events.push(`log ${m}`), warn: (m: string) => events.push(`warn ${m}`) };
  const host = new TelemetryHost(log as unknown as LogOutputChannel, load);
  const settings = (otlpEndpoint: string, useCodexOtelConfig: boolean): Settings => ({
    codexHome: '/h',
    socketPath: '/h/s.sock',
    codexPath: 'codex',
    notifications: 'attention',
    options: DEFAULT_OPTIONS,
    telemetry: { otlpEndpoint, useCodexOtelConfig },
  });
  const armed: Decision = { type: 'armed', threadId: 't', title: 'x' };

  host.apply(settings('', false));
  host.decided(armed);
  assert.deepEqual(events.splice(0), [], 'nothing asked for, yet something started or was sent');
  host.apply(settings('', true));
  host.decided(armed);
  assert.deepEqual(events.splice(0), ['start codex /h', 'log telemetry: exporting to codex /h', 'codex /h got armed']);
  host.apply(settings('', true)); // another setting changed: the export is left alone
  assert.deepEqual(events.splice(0), []);
  host.apply(settings(' http://c:4318 ', true)); // the endpoint comes first
  await Promise.resolve();
  assert.deepEqual(events.splice(0), [
    'stop codex /h',
    'start http://c:4318',
    'log telemetry: exporting to http://c:4318',
  ]);
  host.apply(settings('', false));
  host.decided(armed);
  await Promise.resolve();
  assert.deepEqual(events.splice(0), ['stop http://c:4318', 'log telemetry: off (the settings export nothing)']);
  host.apply(settings('http://c:4318', false));
  await host.stop();
  assert.deepEqual(events.splice(0), [
    'start http://c:4318',
    'log telemetry: exporting to http://c:4318',
    'stop http://c:4318',
  ]);
});
