// Where the export goes: a base URL, or the exporter of Codex's own `[otel]` table (its shape as
// codex-rs/config/src/types.rs defines it: docs/telemetry.md), read by the product's small TOML
// reader from a real config.toml in a temporary CODEX_HOME.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fromCodexConfig, fromEndpoint } from '../../src/telemetry/destination';
import { parseToml, TomlError } from '../../src/telemetry/toml';

/** The config a test's home holds: a real Codex config (a model provider) with `otel` in it. */
const CONFIG = (otel: string) => `model = "mock-model"
model_provider = "mock"
approval_policy = "never"

${otel}

[model_providers.mock]
name = "Mock"
base_url = "http://127.0.0.1:1/v1"
wire_api = "responses"
`;

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-otelcfg-'));
});
afterEach(() => fs.rmSync(home, { recursive: true, force: true }));
const write = (text: string) => fs.writeFileSync(path.join(home, 'config.toml'), text);

describe("Codex's [otel] exporter, reused", () => {
  it('otlp-http (an inline table over several lines, as Codex documents it): its logs URL, metrics beside it, its headers', () => {
    write(
      CONFIG(`[otel]
environment = "staging"
log_user_prompt = false
exporter = { otlp-http = {
  endpoint = "https://otel.example.com/v1/logs",
  protocol = "json",
  headers = { "x-otlp-api-key" = "abc", Authorization = 'Bearer t' },
}}`),
    );
    const r = fromCodexConfig(home);
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.destination.logsUrl, 'https://otel.example.com/v1/logs');
    assert.equal(r.destination.metricsUrl, 'https://otel.example.com/v1/metrics');
    assert.deepEqual(r.destination.headers, { 'x-otlp-api-key': 'abc', Authorization: 'Bearer t' });
    assert.deepEqual(r.destination.metricsHeaders, r.destination.headers);
    assert.equal(r.destination.environment, 'staging');
    assert.doesNotMatch(r.destination.describe, /abc|Bearer/, 'a header value in the log line');
  });

  it('the table form, a metrics_exporter of its own, and protocol "binary": JSON to the same endpoint, said', () => {
    write(
      CONFIG(`[otel.exporter."otlp-http"]
endpoint = "http://127.0.0.1:4318/v1/logs"
protocol = "binary"

[otel.exporter."otlp-http".headers]
"x-a" = "1"

[otel.metrics_exporter.otlp-http]
endpoint = "http://127.0.0.1:9999/m"
protocol = "json"
headers = { "x-m" = "2" }`),
    );
    const r = fromCodexConfig(home);
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.destination.logsUrl, 'http://127.0.0.1:4318/v1/logs');
    assert.equal(r.destination.metricsUrl, 'http://127.0.0.1:9999/m');
    assert.deepEqual(r.destination.headers, { 'x-a': '1' });
    assert.deepEqual(r.destination.metricsHeaders, { 'x-m': '2' });
    assert.equal(r.destination.environment, 'dev', "Codex's default environment");
    assert.match(r.destination.describe, /protocol is "binary": this export sends JSON to the same endpoint/);
  });

  it('otlp-grpc, "none", statsig, no [otel], no config.toml: nothing exported, and why', () => {
    const cases: [string | null, RegExp][] = [
      [
        '[otel]\nexporter = { otlp-grpc = { endpoint = "https://otel.example.com:4317" } }',
        /only an otlp-http exporter can be reused/,
      ],
      ['[otel]\nexporter = "none"', /exporter = "none": Codex sends its records nowhere/],
      ['[otel]\nexporter = "statsig"', /exporter = "statsig"/],
      ['[otel]\nenvironment = "prod"', /no exporter/],
      ['', /has no \[otel\] table/],
      [null, /^no .*config\.toml: Codex has no \[otel\] exporter to reuse; nothing is exported$/],
    ];
    for (const [otel, why] of cases) {
      fs.rmSync(path.join(home, 'config.toml'), { force: true });
      if (otel !== null) write(CONFIG(otel));
      const r = fromCodexConfig(home);
      assert.ok(!r.ok, `${otel}: exported`);
      assert.match(r.reason, why, String(otel));
    }
  });

  it('malformed TOML: a clear message with its line, nothing exported', () => {
    for (const [text, why] of [
      ['[otel]\nexporter = { otlp-http = { endpoint = "http://x/v1/logs" ', /line 2: .*inline table|line 2/],
      ['[otel\nexporter = "none"', /line 1: a table header must end with \]/],
      ['model = mock-model', /line 1: "mock-model" is not a TOML value/],
      ['[otel]\nexporter = "none"\nexporter = "none"', /line 3: exporter is defined twice/],
      ['a = "never closed\n', /line 1: a string is not closed/],
    ] as const) {
      write(text);
      const r = fromCodexConfig(home);
      assert.ok(!r.ok, text);
      assert.match(r.reason, /config\.toml is not valid TOML \(line \d+: .*\): nothing is exported/, text);
      assert.match(r.reason, why, text);
    }
  });

  it('an otlp-http exporter without an endpoint, or not http(s): refused, said', () => {
    write(CONFIG('[otel]\nexporter = { otlp-http = { protocol = "json" } }'));
    const a = fromCodexConfig(home);
    assert.ok(!a.ok && /exporter\.otlp-http has no endpoint/.test(a.reason));
    write(CONFIG('[otel]\nexporter = { otlp-http = { endpoint = "localhost:4318", protocol = "json" } }'));
    const b = fromCodexConfig(home);
    assert.ok(!b.ok && /http:\/\/ or https:\/\//.test(b.reason), JSON.stringify(b));
  });
});

describe('--otlp-endpoint: a base URL', () => {
  it("OTLP's signal paths under it", () => {
    const r = fromEndpoint('http://127.0.0.1:4318/');
    assert.ok(r.ok);
    assert.deepEqual(
      [r.destination.logsUrl, r.destination.metricsUrl, r.destination.headers],
      ['http://127.0.0.1:4318/v1/logs', 'http://127.0.0.1:4318/v1/metrics', {}],
    );
  });
});

describe('the TOML reader', () => {
  it('reads what a config.toml holds beside [otel]', () => {
    const doc = parseToml(`# a comment
title = "a \\"quoted\\" \\u00e9"  # trailing comment
literal = 'C:\\path'
multi = """
line one \\
  continued"""
raw = '''
two'''
n = 1_000
f = -0.5e2
hex = 0xff
yes = true
when = 1979-05-27T07:32:00Z
day = 1979-05-27 07:32:00
arr = [1, "two", [3],
  { x = 1 }, # comment
]
a.b."c.d" = 1

[[profiles]]
name = "one"
[[profiles]]
name = "two"
[profiles.sub]
k = 'v'
`);
    assert.deepEqual(doc, {
      title: 'a "quoted" é',
      literal: 'C:\\path',
      multi: 'line one continued',
      raw: 'two',
      n: 1000,
      f: -50,
      hex: 255,
      yes: true,
      when: '1979-05-27T07:32:00Z',
      day: '1979-05-27 07:32:00',
      arr: [1, 'two', [3], { x: 1 }],
      a: { b: { 'c.d': 1 } },
      profiles: [{ name: 'one' }, { name: 'two', sub: { k: 'v' } }],
    });
  });

  it('throws TomlError, never a guess', () => {
    for (const bad of ['a = ', 'a = 1 b = 2', '= 1', 'a = [1 2]', 'a = {b = 1', '[a]\nb = 1\n[a.b]\n'])
      assert.throws(() => parseToml(bad), TomlError, bad);
  });
});
