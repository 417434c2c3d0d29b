// The product's zod messages (src/util/zodMessages.ts) word each issue as zod's own English locale
// does: for every kind of issue, over the schemas' kinds of input, the same text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { en } from 'zod/v4/locales';
import { type IssueFields, issueMessage } from '../../src/util/zodMessages';
import { z } from '../../src/util/zod';

const locale = en().localeError as unknown as (issue: IssueFields) => string;

const ISSUES: IssueFields[] = [
  ...[null, undefined, 1, Number.NaN, Infinity, -Infinity, 'x', true, [], {}, new Map(), 1n].flatMap((input) =>
    ['string', 'number', 'object', 'int', 'nan'].map((expected) => ({ code: 'invalid_type', expected, input })),
  ),
  { code: 'invalid_value', values: ['a'] },
  { code: 'invalid_value', values: [1] },
  { code: 'invalid_value', values: ['a', 'b', 3, null, 4n] },
  ...['string', 'array', 'number', 'bigint', 'int', undefined].flatMap((origin) =>
    [{ inclusive: true }, { inclusive: false }, { exact: true, inclusive: true }].flatMap((how) => [
      { code: 'too_big', origin, maximum: 5, ...how },
      { code: 'too_small', origin, minimum: 2, ...how },
      { code: 'too_big', origin, maximum: 9007199254740991n, ...how },
    ]),
  ),
  { code: 'invalid_key', origin: 'record' },
  { code: 'invalid_element', origin: 'map' },
  { code: 'invalid_union', options: ['a', 'b'] },
  { code: 'invalid_union', options: [] },
  { code: 'invalid_union', inclusive: false },
  { code: 'invalid_union' },
  { code: 'custom' },
  { code: 'somethingLater' },
];

test('every kind of issue reads as zod’s English locale words it', () => {
  for (const issue of ISSUES)
    assert.equal(
      issueMessage(issue),
      locale(issue),
      JSON.stringify(issue, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
    );
});

test('what no schema here raises reads "Invalid input" (the locale has words of its own)', () => {
  const unused: IssueFields[] = [
    { code: 'invalid_format', format: 'email' } as IssueFields,
    { code: 'unrecognized_keys', keys: ['a'] } as IssueFields,
    { code: 'not_multiple_of', divisor: 3 } as IssueFields,
  ];
  for (const issue of unused) {
    assert.equal(issueMessage(issue), 'Invalid input');
    assert.notEqual(locale(issue), 'Invalid input');
  }
});

test('the schemas parse with these messages', () => {
  const schema = z.object({ title: z.string(), n: z.int(), kind: z.enum(['a', 'b']) });
  const r = schema.safeParse({ title: 1, n: 1.5, kind: 'c' });
  assert.equal(r.success, false);
  assert.deepEqual(
    r.error?.issues.map((i) => i.message),
    [
      'Invalid input: expected string, received number',
      'Invalid input: expected int, received number',
      'Invalid option: expected one of "a"|"b"',
    ],
  );
});
