// zod's English issue messages ("Invalid input: expected string, received number"), worded as
// zod's own English locale words them, for the issues the product's schemas can raise (types,
// literals and enums, bounds on numbers and lengths, unions, record keys), without the locale's
// words for what no schema here uses (string formats, sets, maps, files): those were most of its
// 2.7 KiB in the extension's bundle, whose target is 250 KiB (docs/performance.md). Any other
// issue reads "Invalid input". test/unit/zodMessages.test.ts holds them to the locale's words.
import { util } from 'zod/v4/core';

/** The fields of a zod issue read here (zod's raw issue, as its error map receives it). */
export interface IssueFields {
  code?: string;
  expected?: string;
  input?: unknown;
  values?: util.Primitive[];
  origin?: string;
  maximum?: number | bigint;
  minimum?: number | bigint;
  inclusive?: boolean;
  exact?: boolean;
  options?: unknown[];
}

function typeName(type: string, input?: unknown): string {
  if (type === 'number' && typeof input === 'number' && !Number.isFinite(input)) return String(input);
  return type === 'nan' ? 'NaN' : type;
}

/** A bound: `too_big` (`big`) or `too_small`, on a number or on a string's or an array's length. */
function bound(i: IssueFields, big: boolean): string {
  const unit = i.origin === 'string' ? ' characters' : i.origin === 'array' ? ' items' : '';
  const adj = i.exact ? 'exactly ' : (big ? '<' : '>') + (i.inclusive ? '=' : '');
  const what = i.origin ?? (big ? 'value' : i.origin);
  return `Too ${big ? 'big' : 'small'}: expected ${what} to ${unit ? 'have' : 'be'} ${adj}${big ? i.maximum : i.minimum}${unit}`;
}

/** The message of a zod issue, in zod's English words. */
export function issueMessage(i: IssueFields): string {
  switch (i.code) {
    case 'invalid_type':
      return `Invalid input: expected ${typeName(String(i.expected))}, received ${typeName(util.parsedType(i.input), i.input)}`;
    case 'invalid_value': {
      const values = i.values ?? [];
      return values.length === 1
        ? `Invalid input: expected ${util.stringifyPrimitive(values[0])}`
        : `Invalid option: expected one of ${util.joinValues(values, '|')}`;
    }
    case 'too_big':
    case 'too_small':
      return bound(i, i.code === 'too_big');
    case 'invalid_key':
      return `Invalid key in ${i.origin}`;
    case 'invalid_element':
      return `Invalid value in ${i.origin}`;
    case 'invalid_union':
      if (i.options?.length)
        return `Invalid discriminator value. Expected ${i.options.map((o) => `'${String(o)}'`).join(' | ')}`;
      if (i.inclusive === false) return 'Invalid input: more than one option matched';
  }
  return 'Invalid input';
}
